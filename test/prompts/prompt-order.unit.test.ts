import { inPromptOrder, promptOrderProblem, promptOrderWithin } from '../../core/prompt-order';

const ids = (items: { id: string }[]) => items.map((i) => i.id);
const integrations = ['a', 'b', 'c', 'd'].map((id) => ({ id }));

describe('promptOrder', () => {
  test('its integrations come first, in its order; the others follow in the agent\'s order', () => {
    expect(ids(inPromptOrder(integrations, (i) => i.id, ['c', 'a']))).toEqual(['c', 'a', 'b', 'd']);
    expect(ids(inPromptOrder(integrations, (i) => i.id, []))).toEqual(['a', 'b', 'c', 'd']);
    expect(ids(inPromptOrder(integrations, (i) => i.id, ['d', 'c', 'b', 'a']))).toEqual(['d', 'c', 'b', 'a']);
    // An entry that is no longer among the integrations orders nothing.
    expect(ids(inPromptOrder(integrations, (i) => i.id, ['gone', 'b']))).toEqual(['b', 'a', 'c', 'd']);
  });

  test('new integrations keep the entries still among them', () => {
    expect(promptOrderWithin(['c', 'a'], ['a', 'b'])).toEqual(['a']);
    expect(promptOrderWithin(['c', 'a'], [])).toEqual([]);
  });

  test('every entry must name one of the agent\'s integrations, once', () => {
    expect(promptOrderProblem(['beta', 'int_a'], ['int_b', 'int_a'], ['int_a', 'int_b'])).toBeUndefined();
    expect(promptOrderProblem([], [], [])).toBeUndefined();
    expect(promptOrderProblem(['nope', 'other'], [null, 'int_x'], ['int_a'])).toBe("nope, other: not among the agent's integrations");
    expect(promptOrderProblem(['int_a', 'alpha'], ['int_a', 'int_a'], ['int_a'])).toBe('alpha: names an integration named before it');
  });
});
