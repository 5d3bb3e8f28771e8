import { canonicalJson } from './canonical-json';
import type { Expectation } from './eval';
import type { RunStatus, StopReason } from './run';

/**
 * Scoring one replay of an eval against its expectation, and telling how its tool calls differ
 * from the original's. Pure: the regular expression is searched elsewhere (in an activity, with a
 * time bound) and its verdict handed in.
 */

/** What scoring reads of a run (the original's or the replay's). */
export interface ScoredRun {
  status: RunStatus;
  stopReason: StopReason | null;
  output: string | null;
  turns: number;
  toolCalls: CallSeen[];
}

/** A tool call as the LLM made it: its name, and its arguments as JSON text (cut when long). */
export interface CallSeen {
  name: string;
  arguments?: string;
}

/** How searching the output for `outputMatches` went. */
export type PatternVerdict = 'matched' | 'not_matched' | 'timed_out';

/**
 * The expectations the replay failed, each named with what failed: `toolsCalled: fx__count`,
 * `outputContains: "Paris"`, `maxTurns: 3 (took 5)`. Empty: it passed. A replay that did not
 * complete fails as `status: failed` (or `cancelled`) unless `stopReason` expects how it stopped.
 */
export function failedExpectations(expect: Expectation, replay: ScoredRun, pattern?: PatternVerdict): string[] {
  const failed: string[] = [];
  const output = replay.output ?? '';
  if (expect.stopReason === undefined && replay.status !== 'completed') failed.push(`status: ${replay.status}`);
  if (expect.stopReason !== undefined && replay.stopReason !== expect.stopReason) {
    failed.push(`stopReason: ${expect.stopReason} (stopped: ${replay.stopReason ?? 'not at all'})`);
  }
  for (const text of listOf(expect.outputContains)) {
    if (!output.includes(text)) failed.push(`outputContains: ${JSON.stringify(text)}`);
  }
  if (expect.outputMatches !== undefined && pattern !== 'matched') {
    failed.push(`outputMatches: /${expect.outputMatches}/${pattern === 'timed_out' ? ' (timed out)' : ''}`);
  }
  const called = new Set(replay.toolCalls.map((c) => c.name));
  for (const name of expect.toolsCalled ?? []) if (!called.has(name)) failed.push(`toolsCalled: ${name}`);
  for (const name of expect.toolsNotCalled ?? []) if (called.has(name)) failed.push(`toolsNotCalled: ${name}`);
  if (expect.maxTurns !== undefined && replay.turns > expect.maxTurns) failed.push(`maxTurns: ${expect.maxTurns} (took ${replay.turns})`);
  return failed;
}

const listOf = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** How the replay's tool calls differ from the original's. */
export interface ToolCallChanges {
  /** calls the replay made that the original did not */
  added: CallSeen[];
  /** calls the original made that the replay did not */
  removed: CallSeen[];
  /** calls of the same tool made with other arguments */
  changed: { name: string; from?: string; to?: string }[];
}

/**
 * The calls the two runs made alike (same name, same arguments as JSON, key order aside) cancel
 * out, each at most once, in order; of the rest, an original's and a replay's call of the same
 * tool pair up, in order, as changed; what is left was removed or added.
 */
export function toolCallChanges(original: CallSeen[], replay: CallSeen[]): ToolCallChanges {
  const left = original.map((c) => ({ call: c, key: callKey(c) }));
  const unmatched: CallSeen[] = [];
  for (const call of replay) {
    const i = left.findIndex((o) => o.key === callKey(call));
    if (i >= 0) left.splice(i, 1);
    else unmatched.push(call);
  }
  const removed = left.map((o) => o.call);
  const changed: ToolCallChanges['changed'] = [];
  const added: CallSeen[] = [];
  for (const call of unmatched) {
    const i = removed.findIndex((o) => o.name === call.name);
    if (i < 0) {
      added.push(call);
      continue;
    }
    const [from] = removed.splice(i, 1);
    changed.push({ name: call.name, ...(from.arguments !== undefined ? { from: from.arguments } : {}),
      ...(call.arguments !== undefined ? { to: call.arguments } : {}) });
  }
  return { added, removed, changed };
}

const callKey = (call: CallSeen) => `${call.name}\u0000${sortedJson(call.arguments)}`;

/** The arguments as canonical JSON (keys sorted); text that does not parse (cut) as it is. */
function sortedJson(text: string | undefined): string {
  if (text === undefined) return '{}';
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return text;
  }
}
