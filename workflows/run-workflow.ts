import {
  ActivityFailure, ApplicationFailure, CancellationScope, continueAsNew, isCancellation, proxyActivities,
  proxyLocalActivities, setHandler, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { LlmTurnOutput } from '../activities/llm-turn';
import type { ToolActivityInput } from '../activities/tool-call';
import { DEFAULT_CONTINUE_AS_NEW_BYTES, type RunError, type RunOutcome, type RunState } from '../core/run';
import { runStatusKey } from '../core/search-attributes';
import { type InputWait, type ToolAvailability, type ToolCallRef, type ToolOutcome } from '../core/tool-call';
import { offeredNativeTools } from '../core/native-tools';
import { installApprovalGate, type ApprovalGate, type ApprovalSeqs } from './approval-gate';
import { runStateQuery, type RunContinuation, type RunWorkflowInput } from './definitions';
import { routeToolCall } from './tool-kinds';
import { installInputWait, type InputVerdict, type InputWaits } from './input-wait';
import { answerSamplings, countSampledDuringCall, type ModelLedger } from './sampling-steps';
import { awaitToolTask } from './task-wait';
import { llmOptions } from './llm-options';
import { waitingAttribute } from './waiting-attribute';
import { allocateEvents, allocateTurnEvents } from './event-numbers';

type Activities = ReturnType<typeof createActivities>;
/** The tool activities, by the names the tool kinds give them (workflows/tool-kinds.ts). */
type ToolActivities = Record<string, (input: ToolActivityInput) => Promise<ToolOutcome>>;
type Run = RunContinuation['run'];
/** What a tool call may wait for, with no activity running: a person's approval, answers to its server's questions. */
interface Waits {
  gate: ApprovalGate;
  inputs: InputWaits;
  /** the run's model steps and usage, which its server's sampling requests add to */
  ledger: ModelLedger;
}

/*
 * Which steps are regular activities and which are local, and why:
 * - prepareRun, discoverPinnedIntegration: regular. Discovery spawns MCP servers and waits for
 *   connects (up to 30 s), heartbeating; a pinned integration is discovered on its own task queue.
 *   prepareRun also runs the first LLM turn, unless pinned integrations must be discovered first.
 * - llmTurn and every tool call: regular. They take long, heartbeat, and a tool call's options
 *   (timeouts, retries, task queue) come from its kind in tool-kinds.ts.
 * - recordToolResult and finishRun: local. Short, idempotent writes to our own database, done on
 *   this worker without a round trip through the Temporal server.
 */

/** Preparation heartbeats while it discovers, then runs the first turn: an LLM turn's bounds. */
const preparing = proxyActivities<Activities>({
  ...llmOptions,
  summary: 'prepare the run (its input, its integrations, the prompt prefix), then LLM turn 1',
  retry: { ...llmOptions.retry, nonRetryableErrorTypes: ['RunNotFound', 'AgentNotFound'] },
});

const recording = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
});

/** The final commit must happen, even after a cancel: more attempts, never cancelled. */
const finishing = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30, nonRetryableErrorTypes: ['RunNotFound'] },
});

export async function runWorkflow(input: RunWorkflowInput): Promise<RunOutcome> {
  const previous = input.continued;
  const state: RunState = {
    runId: input.runId, status: 'running', stopReason: null, error: null,
    turns: previous?.turns ?? 0,
    usage: previous?.usage ?? { inputTokens: 0, outputTokens: 0 },
    toolCallCount: previous?.toolCallCount ?? 0,
    lastTextPreview: previous?.lastTextPreview ?? '',
    eventSeq: previous?.eventSeq ?? 2,
  };
  setHandler(runStateQuery, () => state);
  const listing = waitingAttribute();
  let steps = previous?.llmSteps ?? previous?.turns ?? 0;
  const ledger: ModelLedger = {
    get steps() { return steps; },
    set steps(n) { steps = n; },
    get usage() { return state.usage; },
    set usage(u) { state.usage = u; },
  };
  const waits: Waits = { gate: installApprovalGate(listing), inputs: installInputWait(listing), ledger };

  let continuation: RunContinuation | undefined;
  let cancelled: unknown;
  try {
    const { run, opening } = previous ? { run: previous.run, opening: undefined } : await prepare(input.runId, state);
    continuation = await loop(input, state, run, waits, opening);
  } catch (err) {
    if (!isCancellation(err)) Object.assign(state, { status: 'failed', stopReason: 'error', error: describeFailure(err) });
    else {
      cancelled = err;
      Object.assign(state, { status: 'cancelled', stopReason: 'cancelled' });
    }
  }
  if (continuation) return await continueAsNew<typeof runWorkflow>({ ...input, continued: continuation });

  await finish(state);
  const { eventSeq: _seq, ...outcome } = state;
  // Rethrowing the cancellation ends the workflow as Canceled in Temporal, after the outcome is
  // committed; unless the run had answered first, which is how it ended then.
  if (cancelled && state.status === 'cancelled') throw cancelled;
  return outcome;
}

/** The first turn: its reply when preparation ran it, else the event numbers it was given. */
type Opening = { reply: LlmTurnOutput } | { eventSeq: number };

/**
 * The run's context and tools, and its first turn. Integrations pinned to a task queue are
 * discovered by a worker of that queue; the first turn then waits for them.
 */
async function prepare(runId: string, state: RunState): Promise<{ run: Run; opening: Opening }> {
  const eventSeq = allocateEvents(state, 2);
  const { context, tools, pinned, firstTurn } = await preparing.prepareRun({ runId, firstTurn: { eventSeq } });
  if (pinned.length === 0) return { run: { context, tools }, opening: firstTurn ? { reply: firstTurn } : { eventSeq } };
  const routes = await Promise.all(pinned.map(({ integrationId, taskQueue }) => proxyActivities<Activities>({
    taskQueue,
    startToCloseTimeout: '1 minute',
    summary: `MCP discovery of ${integrationId} on ${taskQueue}`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 },
  }).discoverPinnedIntegration({ runId, integrationId })));
  for (const found of routes) Object.assign(tools.mcpRoutes, found);
  tools.integrationCount += pinned.length;
  return { run: { context, tools }, opening: firstTurn ? { reply: firstTurn } : { eventSeq } };
}

/** LLM turns until an answer, maxTurns, or a continue-as-new, which it returns. */
async function loop(
  input: RunWorkflowInput, state: RunState, run: Run, waits: Waits, opening?: Opening,
): Promise<RunContinuation | undefined> {
  const { context, tools } = run;
  while (state.turns < context.maxTurns) {
    const turn = state.turns + 1;
    const first = turn === 1 ? opening : undefined;
    // Preparation played step 0 when it ran the first turn.
    const step = waits.ledger.steps++;
    const reply = first && 'reply' in first ? first.reply : await proxyActivities<Activities>({ ...llmOptions, summary: `LLM turn ${turn}` }).llmTurn({
      runId: input.runId, threadId: context.threadId, agentId: context.agentId, turn, step,
      nativeTools: offeredNativeTools(tools), hasDataSources: tools.hasDataSources, eventSeq: first?.eventSeq ?? allocateEvents(state, 2),
      usageBefore: state.usage,
    });
    state.turns = turn;
    state.usage = {
      inputTokens: state.usage.inputTokens + reply.usage.inputTokens,
      outputTokens: state.usage.outputTokens + reply.usage.outputTokens,
    };
    state.lastTextPreview = reply.textPreview;
    if (reply.toolCalls.length === 0) {
      // The turn ended the run with its answer, and wrote run_ended at the number after its own.
      allocateEvents(state, 1);
      Object.assign(state, { status: 'completed', stopReason: 'answer' });
      return undefined;
    }

    const asks = reply.toolCalls.map((call) => Boolean(routeToolCall(call.name, tools).route?.approval));
    const { requested, callSeqs, resolved } = allocateTurnEvents(state, asks);
    const outcomes = await Promise.all(reply.toolCalls.map((call, index) => callTool({
      runId: input.runId, threadId: context.threadId, turn, index, toolCallId: call.id, name: call.name, eventSeq: callSeqs[index],
    }, tools, { waits, summary: call.summary, approvalSeqs: { requested: requested[index], resolved: resolved[index] } })));
    state.toolCallCount += outcomes.length;
    if (outcomes.some((o) => o.importedDataSource)) tools.hasDataSources = true;

    const info = workflowInfo();
    // A cancel that arrived during this turn must not be lost to continue-as-new.
    if ((info.historySize >= (input.continueAsNewAtHistoryBytes ?? DEFAULT_CONTINUE_AS_NEW_BYTES) || info.continueAsNewSuggested)
      && state.turns < context.maxTurns && !CancellationScope.current().consideredCancelled) {
      const { turns, eventSeq, usage, toolCallCount, lastTextPreview } = state;
      return { turns, eventSeq, usage, toolCallCount, lastTextPreview, llmSteps: waits.ledger.steps, run };
    }
  }
  Object.assign(state, { status: 'completed', stopReason: 'max_turns' });
  return undefined;
}

/**
 * One tool call, dispatched by its kind. A tool that fails, or whose activity gave up, answers the LLM with text.
 * A tool whose integration asks for approval waits for it first; denied or timed out, the LLM reads why.
 * A call whose 2026-era server asks questions waits for the answers, then runs again with them (a
 * new activity per round). Not an async function: every promise made in workflow code costs the
 * SDK a stack trace (its stack-trace query), so the usual call is its activity's promise and one
 * handler, nothing more.
 */
function callTool(
  ref: Omit<ToolCallRef, 'type'>, tools: ToolAvailability,
  { waits, summary, approvalSeqs }: { waits: Waits; summary?: string; approvalSeqs: ApprovalSeqs },
): Promise<ToolOutcome> {
  const { type, kind, route } = routeToolCall(ref.name, tools);
  const input = { ...ref, type, ...(route ? { route } : {}) };
  const { activity, options } = kind;
  if (!activity || !options) {
    return recording.recordToolResult({ ...input, status: 'error', content: kind.failureText('', ref.name) });
  }
  const failed = (err: unknown) => {
    if (isCancellation(err)) throw err;
    return recording.recordToolResult({ ...input, status: 'error', content: kind.failureText(describeFailure(err).message, ref.name) });
  };
  const run = (resume?: InputWait): Promise<ToolOutcome> => {
    const opts = options({ ...ref, summary }, route);
    // Each round's call is an activity of its own.
    if (resume && opts.activityId) opts.activityId = `${opts.activityId}:${resume.round}`;
    return proxyActivities<ToolActivities>(opts)[activity]({ ...input, step: waits.ledger.steps, ...(resume ? { resume: { roundId: resume.roundId } } : {}) }).then(
      (outcome) => {
        countSampledDuringCall(waits.ledger, outcome.sampled);
        if (outcome.task) return awaitToolTask(input, outcome.task, settled).catch(failed);
        return outcome.waiting ? answered(outcome.waiting) : outcome;
      }, failed,
    );
  };
  // The round's questions first (a reviewer's decisions on its sampling requests among them), then its sampling steps.
  const settled = (wait: InputWait): Promise<InputVerdict> => (wait.inputIds.length > 0 ? waits.inputs.awaitAnswers(ref.name, wait) : Promise.resolve<InputVerdict>({ answered: true }))
    .then((verdict) => (verdict.answered && wait.samplings?.length ? answerSamplings(waits.ledger, ref, wait) : verdict));
  const answered = (wait: InputWait) => settled(wait).then(
    (verdict) => (verdict.answered ? run(wait) : recording.recordToolResult({ ...input, status: 'error', content: verdict.content })),
  ).catch(failed);
  if (!route?.approval) return run();
  return waits.gate.awaitDecision({ ...ref, type }, route.integrationId, route.approval, approvalSeqs).then(
    (verdict) => (verdict.approved ? run() : recording.recordToolResult({ ...input, status: 'error', content: verdict.content })),
  ).catch(failed);
}

/**
 * The run's end. A turn that answered has written it already; any other end is written here, unless
 * a result is there first (a turn answered while a cancel was on its way): the run ended as that says.
 */
async function finish(state: RunState): Promise<void> {
  if (state.status === 'running') state.status = 'failed';
  if (state.stopReason !== 'answer') {
    const stored = await CancellationScope.nonCancellable(() => finishing.finishRun({
      runId: state.runId, status: state.status as Exclude<RunState['status'], 'running'>, stopReason: state.stopReason ?? 'error',
      error: state.error, turns: state.turns, usage: state.usage, eventSeq: allocateEvents(state, 1),
    }));
    if (stored) Object.assign(state, stored);
  }
  upsertSearchAttributes([{ key: runStatusKey, value: state.status }]);
}

function describeFailure(err: unknown): RunError {
  let cause: unknown = err;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? 'ApplicationFailure', message: cause.message };
  if (cause instanceof Error) return { type: cause.name, message: cause.message };
  return { type: 'Error', message: String(cause) };
}
