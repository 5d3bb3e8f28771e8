import { canonicalJson } from './canonical-json';

/**
 * Replaying a run (POST /v1/runs/:id/replay, docs/time-travel.md): its input again, on a new
 * thread, with its tool calls' results taken from the original's recording where they can be.
 * Pure: the modes, which recorded result a call takes, and what the LLM reads when there is none.
 * The workflow imports it.
 */

/** Where a replay's tool calls get their results. */
export const REPLAY_TOOLS = ['recorded', 'live', 'recorded-then-live'] as const;
export type ReplayTools = (typeof REPLAY_TOOLS)[number];

/** The run a replay replays, and where its calls' results come from (the run object's `replayOf`). */
export interface ReplayOf {
  runId: string;
  tools: ReplayTools;
}

/** A replay that takes recorded results: what its workflow is told (a "live" replay is an ordinary run to it). */
export interface RecordedReplay {
  /** the original run */
  runId: string;
  tools: Exclude<ReplayTools, 'live'>;
}

export const takesRecordedResults = (of: ReplayOf): of is RecordedReplay => of.tools !== 'live';

/**
 * What a replay's run workflow is started with, besides its run id (workflows/definitions.ts
 * RunWorkflowInput): one that takes recorded results is told its original, and stops at a reached
 * limit rather than wait for a person to raise it; a live replay starts as any run does.
 */
export function replayWorkflowInput(of: ReplayOf): { replay?: RecordedReplay; limits?: { onLimit: 'stop' } } {
  return takesRecordedResults(of) ? { replay: { runId: of.runId, tools: of.tools }, limits: { onLimit: 'stop' } } : {};
}

/** A call of the original, by its place in its transcript: its result is the one a replayed call takes. */
export interface RecordedCall {
  turn: number;
  /** the call's index in its turn's reply + 1, as its result's slot */
  slot: number;
}

/**
 * What the workflow decided for a replay's call: answered from the recording, with the original's
 * result (`recorded`) or, when there is none, with notRecordedText (`recorded: null`). A call
 * without one goes live.
 */
export interface ReplayedCall {
  recorded: RecordedCall | null;
}

/** One call of the original that has a result, with what it was called with. */
export interface OriginalCall extends RecordedCall {
  name: string;
  arguments: unknown;
}

/**
 * The recorded result each call takes (null: none), in the calls' order: the first of the
 * originals (in their order) with the same name and the same arguments as canonical JSON that no
 * earlier call took. `originals` are those no earlier turn of the replay has taken: each recorded
 * result is used at most as often as it was recorded.
 */
export function matchRecordedCalls(calls: { name: string; arguments: unknown }[], originals: OriginalCall[]): (RecordedCall | null)[] {
  const left = originals.map((o) => ({ call: o, key: callKey(o.name, o.arguments) }));
  return calls.map((call) => {
    const key = callKey(call.name, call.arguments);
    const i = left.findIndex((o) => o.key === key);
    if (i < 0) return null;
    const [{ call: { turn, slot } }] = left.splice(i, 1);
    return { turn, slot };
  });
}

const callKey = (name: string, args: unknown) => `${name}\u0000${canonicalJson(args ?? {})}`;

/** What the LLM reads for a call the original did not make (the `recorded` mode; docs/time-travel.md). */
export const notRecordedText = (name: string, runId: string) =>
  `Not recorded: ${name} was not called with these arguments in run ${runId}.`;
