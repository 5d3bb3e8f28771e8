import type { LlmTurnOutput } from '../activities/llm-turn';
import type { RecordedReplay, ReplayedCall } from '../core/replay';
import type { ToolAvailability } from '../core/tool-call';
import type { ApprovalSeqs } from './approval-gate';
import type { OpenCall, RunWorkflowInput } from './definitions';
import { allocateTurnEvents } from './event-numbers';
import type { Later } from './later';
import { recording } from './recording';
import { routeToolCall, type RoutedCall } from './tool-kinds';

/** A turn's call as the run dispatches it: by reference, with its approval events' numbers. */
export type TurnCall = OpenCall & { approvalSeqs: ApprovalSeqs };

/**
 * The calls of a turn's reply, each routed and given its events' numbers. A replay's call that its
 * recording answers (replayedCalls) asks no approval, starts no sub-agent's run and waits for no
 * caller, so it takes only the numbers of its start and end. A value, unless a replay must look
 * its recording up (workflows/later.ts).
 */
export function turnCalls(
  input: RunWorkflowInput, state: { eventSeq: number }, at: { threadId: string; turn: number }, tools: ToolAvailability,
  reply: Pick<LlmTurnOutput, 'toolCalls'>,
): Later<TurnCall[]> {
  const routes = reply.toolCalls.map((call) => routeToolCall(call.name, tools));
  if (!input.replay) return routedCalls(input, state, at, routes, reply, []);
  return replayedCalls(input.replay, input.runId, at.turn, routes)
    .then((replayed) => routedCalls(input, state, at, routes, reply, replayed));
}

function routedCalls(
  input: RunWorkflowInput, state: { eventSeq: number }, at: { threadId: string; turn: number }, routes: RoutedCall[],
  reply: Pick<LlmTurnOutput, 'toolCalls'>, replayed: (ReplayedCall | undefined)[],
): TurnCall[] {
  const children = routes.map((r, i) => r.type === 'sub_agent' && !replayed[i]);
  const callers = routes.map((r, i) => r.type === 'caller_tool' && !replayed[i]);
  const asks = routes.map((r, i) => Boolean(r.route?.approval) && !replayed[i]);
  const { requested, callSeqs, resolved } = allocateTurnEvents(state, asks, children, callers);
  return reply.toolCalls.map((call, index) => ({
    ref: {
      runId: input.runId, threadId: at.threadId, turn: at.turn, index, toolCallId: call.id, name: call.name, eventSeq: callSeqs[index],
      ...(children[index] ? { childEvents: true } : {}), ...(callers[index] ? { callerEvents: true } : {}),
    },
    summary: call.summary, approvalSeqs: { requested: requested[index], resolved: resolved[index] },
    ...(replayed[index] ? { replayed: replayed[index] } : {}),
  }));
}

/**
 * Which of a replay's turn's calls its recording answers, by index: those of a kind that would run
 * an activity (an MCP tool, a native tool, a sub-agent, a caller tool; the engine answers the others itself) whose
 * name and arguments the original called with. With "recorded", every such call: one the original
 * did not make reads that it was not recorded. With "recorded-then-live", that one goes live.
 */
async function replayedCalls(
  replay: RecordedReplay, runId: string, turn: number, routes: RoutedCall[],
): Promise<(ReplayedCall | undefined)[]> {
  const indexes = routes.flatMap((r, i) => (r.kind.activity ? [i] : []));
  if (indexes.length === 0) return [];
  const { recorded } = await recording.matchRecordedCalls({ runId, turn, originalRunId: replay.runId, indexes });
  const answered: (ReplayedCall | undefined)[] = routes.map(() => undefined);
  indexes.forEach((index, i) => {
    if (recorded[i] || replay.tools === 'recorded') answered[index] = { recorded: recorded[i] ?? null };
  });
  return answered;
}
