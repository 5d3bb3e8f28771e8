import {
  CancellationScope, isCancellation, proxyActivities,
  proxyLocalActivities, setHandler, setWorkflowOptions, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { LlmTurnOutput } from '../activities/llm-turn';
import { DEFAULT_CONTINUE_AS_NEW_BYTES, type RunOutcome, type RunState } from '../core/run';
import { runStatusKey } from '../core/search-attributes';
import { REFUSED_CALL_EVENTS, toolTaskQueue, type ToolOutcome } from '../core/tool-call';
import { offeredNativeTools } from '../core/native-tool-kinds';
import { installApprovalGate, type ApprovalSeqs } from './approval-gate';
import { callTool, type Waits } from './call-tool';
import { describeFailure } from './failures';
import { addUsage } from '../core/messages';
import { runStateQuery, type OpenCall, type RunContinuation, type RunWorkflowInput } from './definitions';
import { turnCalls } from './turn-calls';
import { installInputWait } from './input-wait';
import { modelLedger } from './sampling-steps';
import { llmOptions } from './llm-options';
import { waitingAttribute } from './waiting-attribute';
import { allocateEvents } from './event-numbers';
import {
  budgetLeft, holdCallsOverBudget, limitOfTurn, stopForBudget, turnMaxTokens,
} from './run-budget';
import { installBudgetAsk } from './budget-ask';
import { installCallerToolWait } from './caller-tool-wait';
import type { Family } from './sub-agent';
import type { EffectiveLimits } from '../core/run-limits';
import { MAX_CHILDREN_AT_ONCE, MAX_DESCENDANTS } from '../core/sub-agents';
import { continueRun, pinnedWhenVersioned, upgradeDue } from './upgrade';

type Activities = ReturnType<typeof createActivities>;
type Run = RunContinuation['run'];

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

/**
 * Preparation heartbeats while it discovers, then runs the first turn: an LLM turn's bounds. A run
 * whose agent has integrations is prepared in the workers' tool slots: discovery is tool work.
 */
const preparing = (discovers: boolean | undefined) => proxyActivities<Activities>({
  ...llmOptions,
  summary: 'prepare the run (its input, its integrations, the prompt prefix), then LLM turn 1',
  retry: { ...llmOptions.retry, nonRetryableErrorTypes: ['RunNotFound', 'AgentNotFound'] },
  ...(discovers ? { taskQueue: toolTaskQueue(workflowInfo().taskQueue) } : {}),
});

/** The final commit must happen, even after a cancel: more attempts, never cancelled. */
const finishing = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30, nonRetryableErrorTypes: ['RunNotFound'],
  },
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
    startedAtMs: previous?.startedAtMs ?? workflowInfo().runStartTime.getTime(),
    ...(previous?.childUsage ? { childUsage: previous.childUsage } : {}),
    ...(previous?.costUsd !== undefined ? { costUsd: previous.costUsd } : {}),
    ...(previous?.childCostUsd !== undefined ? { childCostUsd: previous.childCostUsd } : {}),
  };
  setHandler(runStateQuery, () => state);
  const listing = waitingAttribute();
  const ledger = modelLedger(state, previous?.llmSteps ?? previous?.turns ?? input.fork?.step ?? 0);
  let limits: EffectiveLimits | undefined;
  const family: Family = {
    rootRunId: input.parent?.rootRunId ?? input.runId, depth: input.parent?.depth ?? 0, running: 0, waiting: [],
    maxAtOnce: () => limits?.maxChildrenAtOnce ?? MAX_CHILDREN_AT_ONCE,
    maxDescendants: () => input.parent?.maxDescendants ?? limits?.maxDescendants ?? MAX_DESCENDANTS,
    limitsLeft: () => budgetLeft(state, limits),
    addUsage: (u, costUsd) => {
      state.childUsage = addUsage(u, state.childUsage);
      if (costUsd > 0) state.childCostUsd = (state.childCostUsd ?? 0) + costUsd;
    },
  };
  const waits: Waits = {
    gate: installApprovalGate(listing), inputs: installInputWait(listing), ledger, family, budget: installBudgetAsk(listing),
    callers: installCallerToolWait(listing),
  };

  let continuation: RunContinuation | undefined;
  let cancelled: unknown;
  try {
    const { run, opening } = previous ? { run: previous.run, opening: undefined } : await prepare(input, state);
    limits = run.context.limits;
    continuation = await loop(input, state, run, waits, opening, previous?.openTurn?.calls);
  } catch (err) {
    if (!isCancellation(err)) Object.assign(state, { status: 'failed', stopReason: 'error', error: describeFailure(err) });
    else {
      cancelled = err;
      Object.assign(state, { status: 'cancelled', stopReason: 'cancelled' });
    }
  }
  if (continuation) return await continueRun(input, continuation);

  await finish(state);
  const { eventSeq: _seq, ...outcome } = state;
  // Rethrowing the cancellation ends the workflow as Canceled in Temporal, after the outcome is
  // committed; unless the run had answered first, which is how it ended then.
  if (cancelled && state.status === 'cancelled') throw cancelled;
  return outcome;
}

// Under Worker Versioning a run stays on the build that started it, and moves only at a turn
// boundary (upgrade.ts). An unversioned worker must not name a behavior: the option says it only
// when the execution runs on a Worker Deployment Version.
setWorkflowOptions(pinnedWhenVersioned, runWorkflow);

/** The first turn: its reply when preparation ran it, else the event numbers it was given. */
type Opening = { reply: LlmTurnOutput } | { eventSeq: number };

/**
 * The run's context and tools, and its first turn. Integrations pinned to a task queue are
 * discovered by a worker of that queue; the first turn then waits for them.
 */
async function prepare(
  { runId, limits, parent, discovers, callerTools, fork }: RunWorkflowInput, state: RunState,
): Promise<{ run: Run; opening: Opening }> {
  const eventSeq = allocateEvents(state, 2);
  const { context, tools, pinned, firstTurn } = await preparing(discovers).prepareRun({
    runId, firstTurn: { eventSeq, ...fork }, ...(limits ? { limits } : {}), ...(parent ? { depth: parent.depth } : {}),
    ...(callerTools?.length ? { callerTools } : {}),
  });
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

/** The number of the run's `own`th turn: a fork's go on from its original's (state.turns, maxTurns count its own). */
const turnNumber = (input: RunWorkflowInput, own: number) => (input.fork?.turn ?? 1) - 1 + own;

/** LLM turns until an answer, maxTurns, or a continue-as-new, which it returns. */
async function loop(
  input: RunWorkflowInput, state: RunState, run: Run, waits: Waits, opening?: Opening, openCalls?: OpenCall[],
): Promise<RunContinuation | undefined> {
  const { context, tools } = run;
  // The turn the previous execution left with calls waiting on tasks: its calls end first.
  const carried = openCalls && await endTurn(input, state, run, waits, openCalls);
  if (carried) return carried;
  const carriedLimit = openCalls && limitOfTurn(openCalls);
  if (carriedLimit) return stopForBudget(state, carriedLimit);
  while (state.turns < context.maxTurns) {
    const turn = turnNumber(input, state.turns + 1);
    const first = state.turns === 0 ? opening : undefined;
    // A first turn preparation ran is played already: the budget is checked after it (asking a person, with onLimit "ask").
    const asked = first && 'reply' in first ? undefined : waits.budget.beforeTurn(state, context.limits);
    const spent = asked instanceof Promise ? await asked : asked;
    if (spent) return stopForBudget(state, spent);
    // Preparation played the first step when it ran the first turn.
    const step = waits.ledger.steps++;
    const reply = first && 'reply' in first
      ? first.reply
      : await proxyActivities<Activities>({ ...llmOptions, summary: `LLM turn ${turn}` }).llmTurn({
        runId: input.runId, threadId: context.threadId, agentId: context.agentId, turn, step,
        nativeTools: offeredNativeTools(tools), hasDataSources: tools.hasDataSources, eventSeq: first?.eventSeq ?? allocateEvents(state, 2),
        usageBefore: state.usage, ...turnMaxTokens(state, context.limits),
        ...(state.childUsage ? { childUsage: state.childUsage } : {}), ...(tools.subAgents ? { subAgents: tools.subAgents } : {}),
        ...(context.limits?.maxToolCallsPerTurn ? { maxToolCallsPerTurn: context.limits.maxToolCallsPerTurn } : {}),
        ...(tools.callerTools ? { callerTools: tools.callerTools } : {}),
      });
    state.turns += 1;
    state.usage = addUsage(state.usage, reply.usage);
    if (reply.costUsd) state.costUsd = (state.costUsd ?? 0) + reply.costUsd;
    state.lastTextPreview = reply.textPreview;
    // The calls past the turn's limit were answered by the turn, with events after its own.
    if (reply.refusedToolCalls) allocateEvents(state, REFUSED_CALL_EVENTS * reply.refusedToolCalls);
    if (reply.toolCalls.length === 0) {
      // The turn ended the run with its answer, and wrote run_ended at the number after its own.
      allocateEvents(state, 1);
      Object.assign(state, { status: 'completed', stopReason: 'answer' });
      return undefined;
    }

    // Each step awaited only when it waits (workflows/later.ts).
    const routed = turnCalls(input, state, { threadId: context.threadId, turn }, tools, reply);
    const calls = routed instanceof Promise ? await routed : routed;
    // With onLimit "ask", a person may raise the limit before the calls it would hold.
    const raised = waits.budget.beforeCalls(state, context.limits, calls.length);
    if (raised instanceof Promise) await raised;
    const held = holdCallsOverBudget(state, context.limits, tools, calls);
    if (held instanceof Promise) await held;
    const continued = await endTurn(input, state, run, waits, calls);
    if (continued) return continued;
    const limit = limitOfTurn(calls);
    if (limit) return stopForBudget(state, limit);
  }
  Object.assign(state, { status: 'completed', stopReason: 'max_turns' });
  return undefined;
}

/**
 * Whether the run should continue-as-new: its history is long, or (at a turn boundary) its
 * deployment's target build changed; never once a cancel has come (it must not be lost).
 */
function shouldContinue(input: RunWorkflowInput, boundary: boolean): boolean {
  const info = workflowInfo();
  const long = info.historySize >= (input.continueAsNewAtHistoryBytes ?? DEFAULT_CONTINUE_AS_NEW_BYTES) || info.continueAsNewSuggested;
  return (long || (boundary && upgradeDue(input))) && !CancellationScope.current().consideredCancelled;
}

const continuationOf = (state: RunState, waits: Waits, run: Run): RunContinuation => {
  const { turns, eventSeq, usage, toolCallCount, lastTextPreview, startedAtMs, childUsage, costUsd, childCostUsd } = state;
  return {
    turns, eventSeq, usage, toolCallCount, lastTextPreview, llmSteps: waits.ledger.steps, run, startedAtMs,
    ...(childUsage ? { childUsage } : {}), ...(costUsd !== undefined ? { costUsd } : {}),
    ...(childCostUsd !== undefined ? { childCostUsd } : {}),
  };
};

/**
 * A turn's tool calls, to their end: a continuation when the run should continue-as-new, at the
 * turn's end or while its only calls still running wait on tasks (their waits carried over, so a
 * task of hours does not grow one execution's history). Calls already ended keep their outcome.
 */
async function endTurn(
  input: RunWorkflowInput, state: RunState, run: Run, waits: Waits, calls: Array<OpenCall & { approvalSeqs?: ApprovalSeqs }>,
): Promise<RunContinuation | undefined> {
  const turn = { running: 0, onTasks: 0 };
  const park = () => turn.running === turn.onTasks && shouldContinue(input, false);
  const ends = await Promise.all(calls.map((call) => {
    if (call.outcome) return call.outcome;
    turn.running++;
    const approvalSeqs = call.approvalSeqs ?? { requested: 0, resolved: 0 };
    const replayed = call.replayed && input.replay && { ...call.replayed, originalRunId: input.replay.runId };
    return callTool(call.ref, run.tools, {
      waits, summary: call.summary, approvalSeqs, tasks: { turn, park, resume: call.parked }, ...(replayed ? { replayed } : {}),
    })
      .then((end) => {
        turn.running--;
        return end;
      });
  }));
  if (ends.some((end) => 'parked' in end)) {
    const open = calls.map(({ ref, summary, notMade }, i) => {
      const end = ends[i];
      return {
        ref, ...(summary ? { summary } : {}), ...(notMade ? { notMade } : {}),
        ...('parked' in end ? { parked: end.parked } : { outcome: end }),
      };
    });
    return { ...continuationOf(state, waits, run), openTurn: { calls: open } };
  }
  const outcomes = ends as ToolOutcome[];
  // A call the budget did not let be made was not a call.
  state.toolCallCount += calls.filter((c) => !c.notMade).length;
  if (outcomes.some((o) => o.importedDataSource)) run.tools.hasDataSources = true;
  // A turn the budget cut short ends the run: no continuation.
  if (state.turns < run.context.maxTurns && !limitOfTurn(calls) && shouldContinue(input, true)) return continuationOf(state, waits, run);
  return undefined;
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
      ...(state.limitReached ? { limitReached: state.limitReached } : {}), ...(state.childUsage ? { childUsage: state.childUsage } : {}),
    }));
    if (stored) Object.assign(state, stored);
  }
  upsertSearchAttributes([{ key: runStatusKey, value: state.status }]);
}
