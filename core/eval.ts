import type { StopReason } from './run';

/**
 * Evaluations (POST /v1/evals, docs/time-travel.md): runs replayed with a changed agent or model,
 * each scored against what it was expected to do. What the eval workflow, its activities and the
 * API share. Pure and without zod, so that the workflow may import it.
 */

export const EVAL_WORKFLOW_TYPE = 'evalWorkflow';

export type EvalStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/** The most runs one eval replays (a thread's runs count one each). */
export const MAX_EVAL_RUNS = 100;
/** The most threads one eval names. */
export const MAX_EVAL_THREADS = 20;
/** Replays of one eval that run at once. */
export const MAX_REPLAYS_AT_ONCE = 4;
/** How long `outputMatches` may search one output before it counts as failed (ms). */
export const OUTPUT_MATCH_TIMEOUT_MS = 1_000;

/**
 * What a replay is expected to do. Every field is optional; each one given is checked, and a
 * replay passes when all hold (and it ended as its stopReason, when given, says; else answered).
 */
export interface Expectation {
  /** texts the output must contain (each, case-sensitive) */
  outputContains?: string | string[];
  /** a regular expression (JavaScript syntax, no flags) the output must match, searched with a time bound */
  outputMatches?: string;
  /** tool names (as the LLM saw them, e.g. `fx__count`) the replay must call */
  toolsCalled?: string[];
  /** tool names the replay must not call */
  toolsNotCalled?: string[];
  /** the most LLM turns the replay may take */
  maxTurns?: number;
  /** how the replay must stop */
  stopReason?: StopReason;
}

/**
 * The order an eval's replays run in: groups of indices (into the eval's runs), each group's in
 * order, one after the other (a thread's runs, on one new thread); the groups side by side.
 * `groupOf[i]` is the group of the i-th run. Groups are numbered from 0 in their first run's order.
 */
export function replayGroups(groupOf: readonly number[]): number[][] {
  const groups = new Map<number, number[]>();
  groupOf.forEach((group, index) => {
    const members = groups.get(group);
    if (members) members.push(index);
    else groups.set(group, [index]);
  });
  return [...groups.values()];
}
