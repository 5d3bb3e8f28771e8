import { EngineError } from '../../core/engine-error';
import { checkForkTurn, lastEndedTurn, placeReplacements, replacedResultText, type TurnOutline } from '../../core/fork';
import { toolResultText } from '../../core/tool-texts';

const outline: TurnOutline[] = [
  { turn: 1, calls: [{ id: 'a', name: 'fx__echo' }, { id: 'b', name: 'source_query' }], results: 2 },
  { turn: 2, calls: [{ id: 'c', name: 'agent__helper' }], results: 1 },
  { turn: 3, calls: [{ id: 'd', name: 'fx__echo' }], results: 0 },
];

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof EngineError ? { code: err.code, field: err.details.field } : err;
  }
  return undefined;
};

describe('where a run may be forked', () => {
  test('a turn has ended once its reply and all its results are stored, as every turn before it', () => {
    expect(lastEndedTurn(outline)).toBe(2);
    expect(lastEndedTurn([])).toBe(0);
    expect(lastEndedTurn([{ turn: 1, calls: [], results: 0 }, { turn: 3, calls: [], results: 0 }])).toBe(1);
  });

  test('from turn 1 to the last ended turn + 1; else a conflict naming body.atTurn', () => {
    expect(refusal(() => checkForkTurn(1, 0))).toBeUndefined();
    expect(refusal(() => checkForkTurn(3, 2))).toBeUndefined();
    expect(refusal(() => checkForkTurn(4, 2))).toEqual({ code: 'conflict', field: 'body.atTurn' });
    expect(refusal(() => checkForkTurn(0, 2))).toEqual({ code: 'conflict', field: 'body.atTurn' });
  });
});

describe('replaced tool results', () => {
  test('each goes in the place of its call\'s result', () => {
    expect(placeReplacements([{ toolCallId: 'c', content: 'x' }, { toolCallId: 'b', content: 'y', isError: true }], outline, 3)).toEqual([
      { toolCallId: 'c', content: 'x', turn: 2, slot: 1, name: 'agent__helper' },
      { toolCallId: 'b', content: 'y', isError: true, turn: 1, slot: 2, name: 'source_query' },
    ]);
  });

  test('a call of the fork\'s turn or later, an unknown one, or one named twice is refused naming its index', () => {
    expect(refusal(() => placeReplacements([{ toolCallId: 'a', content: '' }, { toolCallId: 'c', content: '' }], outline, 2)))
      .toEqual({ code: 'validation', field: 'body.toolResults[1].toolCallId' });
    expect(refusal(() => placeReplacements([{ toolCallId: 'zz', content: '' }], outline, 4)))
      .toEqual({ code: 'validation', field: 'body.toolResults[0].toolCallId' });
    expect(refusal(() => placeReplacements([{ toolCallId: 'a', content: '' }, { toolCallId: 'a', content: '' }], outline, 2)))
      .toEqual({ code: 'validation', field: 'body.toolResults[1].toolCallId' });
  });

  test('as an error, the LLM reads the failure text of the tool\'s kind', () => {
    expect(replacedResultText('fx__echo', 'down')).toBe('down');
    expect(replacedResultText('fx__echo', 'down', true)).toBe(toolResultText.mcpToolFailed('down'));
    expect(replacedResultText('source_query', 'no table', true)).toBe(toolResultText.sourceQueryFailed('no table'));
    expect(replacedResultText('retrieve_mcp_resource', 'gone', true)).toBe(toolResultText.resourceFailed('gone'));
    expect(replacedResultText('agent__helper', 'broke', true)).toBe('Sub-agent helper failed: broke');
  });
});
