/**
 * An agent's `promptOrder`: the integrations whose conventional prompts come first in the prompt
 * prefix, in that order; the agent's other integrations follow in its `integrationIds` order.
 */

/** `items` (in the agent's integration order) with those `promptOrder` names first, in its order. */
export function inPromptOrder<T>(items: readonly T[], idOf: (item: T) => string, promptOrder: readonly string[]): T[] {
  const rank = new Map(promptOrder.map((id, i) => [id, i]));
  return items
    .map((item, index) => ({ item, index, rank: rank.get(idOf(item)) ?? promptOrder.length }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map((x) => x.item);
}

/** The entries that are still among the agent's integrations (after its integrations changed). */
export function promptOrderWithin(promptOrder: readonly string[], integrationIds: readonly string[]): string[] {
  const kept = new Set(integrationIds);
  return promptOrder.filter((id) => kept.has(id));
}

/**
 * Why a promptOrder is refused, or undefined: `found` holds the integration id each entry of
 * `refs` names (null: none), and each must be one of the agent's integrations, named once.
 */
export function promptOrderProblem(
  refs: readonly string[], found: readonly (string | null)[], integrationIds: readonly string[],
): string | undefined {
  const outside = refs.filter((_, i) => found[i] === null || !integrationIds.includes(found[i]!));
  if (outside.length > 0) return `${outside.join(', ')}: not among the agent's integrations`;
  const twice = refs.filter((_, i) => found.indexOf(found[i]) !== i);
  if (twice.length > 0) return `${twice.join(', ')}: names an integration named before it`;
  return undefined;
}
