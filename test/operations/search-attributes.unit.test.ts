import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { runSearchAttributeKeys, searchAttributeTypeName } from '../../core/search-attributes';
import { addCommand, missingAttributesText } from '../../platform/temporal/search-attributes';

describe('what the operator is told to add', () => {
  test('one command, each attribute named with its type (the CLI pairs --name and --type by rank)', () => {
    const flag = defineSearchAttributeKey('paused', SearchAttributeType.BOOL);
    const count = defineSearchAttributeKey('retries', SearchAttributeType.INT);
    expect(addCommand('prod', [runSearchAttributeKeys[0], flag, runSearchAttributeKeys[1], count])).toBe(
      'temporal operator search-attribute create --namespace prod --name threadId --type Keyword --name paused --type Bool '
      + '--name agentId --type Keyword --name retries --type Int',
    );
  });

  test('the text names the namespace, each missing attribute and the command', () => {
    const text = missingAttributesText('prod', runSearchAttributeKeys.slice(1, 3));
    expect(text).toMatch(/^Namespace prod lacks the search attributes agentId, RunStatus, /);
    expect(text).toContain('--name agentId --type Keyword --name RunStatus --type Keyword');
    expect(text).not.toContain('threadId');
  });

  test('every type has the name the Temporal CLI takes', () => {
    expect(Object.values(SearchAttributeType).map((type) => searchAttributeTypeName({ type })))
      .toEqual(['Text', 'Keyword', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList']);
  });
});
