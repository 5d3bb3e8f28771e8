import { addedWords, budgetWords, checkRaise, raiseSuggestion, usd } from '../../console/src/budget';
import type { PendingBudget } from '../../console/src/types';

/** The console's figures for a run waiting for budget, what its raise form offers, and its check before the API's. */
describe('a run waiting for budget, in the console', () => {
  const budget = (over: Partial<PendingBudget>): PendingBudget => ({
    limitReached: 'maxCostUsd', spent: { costUsd: 0.0000435, inputTokens: 1200, outputTokens: 30, toolCalls: 1 },
    limits: { maxCostUsd: 0.000001 }, requestedAt: '2025-01-01T00:00:00Z', expiresAt: '2025-01-02T00:00:00Z', ...over,
  });

  test('USD keeps cents from a dollar up and three significant digits below, never rounding a spend to nothing', () => {
    expect([0, 0.000001, 0.0000435, 0.5, 0.123456, 1, 1234.5, 2e-13].map(usd))
      .toEqual(['$0.00', '$0.000001', '$0.0000435', '$0.50', '$0.123', '$1.00', '$1,234.50', '$2.0e-13']);
  });

  test('the limit reached is offered as much again as it, or as the run spent past it; the others start empty', () => {
    expect(raiseSuggestion(budget({}))).toEqual({ maxCostUsd: '0.000086' });
    expect(raiseSuggestion(budget({ spent: { costUsd: 3.2, inputTokens: 0, outputTokens: 0, toolCalls: 0 }, limits: { maxCostUsd: 5 } })))
      .toEqual({ maxCostUsd: '5' });
    expect(raiseSuggestion(budget({ limitReached: 'maxToolCalls', limits: { maxToolCalls: 3, maxCostUsd: 2, maxInputTokens: 1000 } })))
      .toEqual({ maxToolCalls: '3', maxCostUsd: '', maxInputTokens: '' });
    expect(raiseSuggestion(budget({ limitReached: 'maxInputTokens', limits: { maxInputTokens: 1000 } }))).toEqual({ maxInputTokens: '1400' });
  });

  test('a raise is checked against the limits set: positive, whole for counts, within bounds, at least one', () => {
    const limits = { maxCostUsd: 1, maxToolCalls: 4, maxInputTokens: 100 };
    expect(checkRaise(limits, { maxCostUsd: ' 2.5 ', maxToolCalls: '', maxInputTokens: '10' }))
      .toEqual({ add: { maxCostUsd: 2.5, maxInputTokens: 10 }, errors: {} });
    expect(checkRaise(limits, { maxCostUsd: '-1', maxToolCalls: '1.5', maxInputTokens: '2000000000' }).errors).toEqual({
      maxCostUsd: 'must be a number above 0', maxToolCalls: 'must be a whole number', maxInputTokens: 'must be at most 1,000,000,000',
    });
    expect(checkRaise(limits, { maxCostUsd: 'abc' })).toEqual({ errors: { maxCostUsd: 'must be a number above 0' } });
    expect(checkRaise(limits, {})).toEqual({ errors: { form: 'Give an amount to add to at least one limit.' } });
    // A limit that is not set is not raised: its field is not there, and nothing of it is sent.
    expect(checkRaise({ maxToolCalls: 4 }, { maxCostUsd: '3', maxToolCalls: '2' })).toEqual({ add: { maxToolCalls: 2 }, errors: {} });
  });

  test('in words: the limit reached with its value, and what a raise added', () => {
    expect(budgetWords(budget({}))).toBe('Waiting for a person to raise the budget or stop the run: it reached its limit on cost (USD), maxCostUsd $0.000001');
    expect(addedWords({ maxCostUsd: 0.5, maxToolCalls: 2 })).toBe('maxCostUsd +$0.50, maxToolCalls +2');
  });
});
