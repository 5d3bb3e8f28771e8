import { ApplicationFailure, Context } from '@temporalio/activity';
import { endedSeqOf, type ToolCallRef, type ToolOutcome } from '../core/tool-call';
import { RESULT_PREVIEW_BYTES } from '../core/tool-texts';
import { shortened, truncateUtf8, utf8Length } from '../core/truncated-text';
import { isUnreachableDb, type Queryable } from '../store/pool';
import { appendEvent, eventWrite } from '../store/runs/events';
import { findToolCallAndRequest, toolCallWrite, type ToolCallRecord } from '../store/runs/tool-calls';
import { runMessageWrite } from '../store/runs/transcript';
import { writeTogether, type Write } from '../store/runs/writes';
import type { Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import type { ToolCall } from '../core/messages';
import { traceToolCall } from '../platform/tracing/run-trace';
import type { ActivityDeps } from './deps';
import { personWaits } from './person-waits';
import { isPlainObject } from '../core/plain-object';
import { TenantSlotCaps, ToolSlots } from './tool-slots';
import { parseToolArguments } from './tools/native-tool';
import type { AnyToolHandler, CheckedCall, RejectedCall, ToolActivityInput, ToolHandler, ToolResult } from './tool-handler';

/** Well inside the 10 s heartbeat timeout the workflow sets, so a live call is never mistaken for a dead worker. */
const HEARTBEAT_EVERY_MS = 3_000;

const isRejected = <R>(c: CheckedCall<R> | RejectedCall): c is RejectedCall => 'status' in c;

/**
 * The call by reference: either the outcome already stored for it (the worker died after storing
 * but before reporting: the tool must not run again), or the call with its arguments. A routed
 * call (an MCP tool) names its integration before any check: the integration's row comes with the
 * call, and the call's start is recorded in the same statement.
 */
async function loadToolCall(
  db: Queryable, input: ToolActivityInput,
): Promise<{ stored: ToolCallRecord } | { call: ToolCall; integration?: Integration; startRecorded: boolean }> {
  const { runId, turn, index } = input;
  const integrationId = input.route?.integrationId;
  const { stored, assistant, integration } = await findToolCallAndRequest(db, runId, turn, index + 1, integrationId
    ? { integrationId, started: { seq: input.eventSeq, data: startedData(input, integrationId) } }
    : {});
  if (stored) return { stored };
  const call = assistant?.role === 'assistant' ? assistant.toolCalls?.[index] : undefined;
  if (!call) throw ApplicationFailure.nonRetryable(`Tool call ${index} of turn ${turn} is not in run ${runId}`, 'ToolCallNotFound');
  return { call, ...(integration ? { integration } : {}), startRecorded: Boolean(integrationId) };
}

/** The outcome of a call stored earlier, as the handlers that may have stored it restore it. */
export function storedOutcome(stored: ToolCallRecord, handlers: AnyToolHandler[]): ToolOutcome {
  const restored = handlers.reduce<Partial<ToolOutcome>>((o, h) => ({ ...o, ...h.restored?.(stored) }), {});
  return { status: stored.status, resultBytes: stored.resultBytes, ...restored };
}

// The event's own type is its row's: the call's kind goes as toolType.
const startedData = (ref: ToolCallRef, integrationId?: string) => ({
  turn: ref.turn, toolCallId: ref.toolCallId, name: ref.name, toolType: ref.type, integrationId: integrationId ?? null,
});

async function recordToolStarted(db: Queryable, ref: ToolCallRef, integrationId?: string): Promise<void> {
  await appendEvent(db, ref.runId, ref.eventSeq, 'tool_call_started', startedData(ref, integrationId));
}

/**
 * Writes a result in full to the transcript, a preview to the run's tool calls, and the end event:
 * one statement, all or nothing. The start event again too, where it is missing: the call may not
 * have recorded it (a call the workflow answers itself), or its unflushed commit was lost (PROGRESS_ONLY).
 */
export async function storeToolResult(
  db: Queryable, ref: ToolCallRef,
  result: ToolResult & { integrationId?: string; durationMs: number; childRunId?: string; alsoWrite?: Write[] }
    & Pick<ToolCallRecord, 'replayed' | 'recordedFrom'>,
): Promise<ToolOutcome> {
  const resultBytes = utf8Length(result.content);
  await writeTogether(db, [
    eventWrite(ref.runId, ref.eventSeq, 'tool_call_started', startedData(ref, result.integrationId)),
    runMessageWrite(ref.runId, ref.turn, ref.index + 1, {
      role: 'tool', toolCallId: ref.toolCallId, name: ref.name, content: result.content,
    }),
    toolCallWrite(ref.runId, {
      id: ref.toolCallId, turn: ref.turn, slot: ref.index + 1, name: ref.name, type: ref.type,
      integrationId: result.integrationId ?? null, status: result.status, durationMs: result.durationMs,
      result: truncateUtf8(result.content, RESULT_PREVIEW_BYTES), resultBytes,
      ...(result.childRunId ? { childRunId: result.childRunId } : {}),
      ...(result.replayed ? { replayed: result.replayed } : {}), ...(result.recordedFrom ? { recordedFrom: result.recordedFrom } : {}),
    }),
    ...(result.alsoWrite ?? []),
    eventWrite(ref.runId, endedSeqOf(ref), 'tool_call_ended', {
      turn: ref.turn, toolCallId: ref.toolCallId, name: ref.name, toolType: ref.type,
      integrationId: result.integrationId ?? null, status: result.status, durationMs: result.durationMs,
    }),
  ]);
  return { status: result.status, resultBytes, ...(result.importedDataSource ? { importedDataSource: true } : {}) };
}

/** The activity serving one tool kind: the shared steps around the handler's check and execute. */
export function toolActivity<R>(deps: ActivityDeps & { toolSlots: ToolSlots }, handler: ToolHandler<R>) {
  return async (input: ToolActivityInput): Promise<ToolOutcome> => {
    // First of all: a call that must wait its turn holds no slot and touches no row.
    const tenant = await deps.toolSlots.takeTenant(input.tenantId);
    if ('busy' in tenant) return { status: 'ok', resultBytes: 0, busy: tenant.busy };
    const route = input.route;
    const release = route && deps.toolSlots.take(route.integrationId, route.maxConcurrentCalls);
    if (route && !release) {
      tenant.release();
      return { status: 'ok', resultBytes: 0, busy: deps.toolSlots.busy(route.integrationId, route.integrationName) };
    }
    const ctx = Context.current();
    const heartbeat = () => ctx.heartbeat();
    // From the start: on a starved worker the bookkeeping below alone can outlast the heartbeat timeout.
    const timer = setInterval(heartbeat, HEARTBEAT_EVERY_MS);
    try {
      return await runToolCall(deps, handler, input, ctx, heartbeat);
    } finally {
      clearInterval(timer);
      release?.();
      tenant.release();
    }
  };
}

async function runToolCall<R>(
  deps: ActivityDeps & { toolSlots: ToolSlots }, handler: ToolHandler<R>, input: ToolActivityInput, ctx: Context, heartbeat: () => void,
): Promise<ToolOutcome> {
  const loaded = await loadToolCall(deps.db, input);
  if ('stored' in loaded) return storedOutcome(loaded.stored, [handler]);
  const args = isPlainObject(loaded.call.arguments) ? loaded.call.arguments : {};
  const checked = await checkCall(handler, args, input, deps);
  // A routed call's integration is its route's.
  const integrationId = input.route?.integrationId ?? checked.integrationId;
  // A native tool that reads from an integration (a resource, a prompt) counts against its slots too.
  const slotted = handler.usesIntegrationSlot && !isRejected(checked) && integrationId ? integrationId : undefined;
  const release = slotted ? deps.toolSlots.take(slotted) : undefined;
  if (slotted && !release) {
    return { status: 'ok', resultBytes: 0, busy: deps.toolSlots.busy(slotted, (checked as CheckedCall<R>).integrationName ?? slotted) };
  }
  try {
    if (!loaded.startRecorded) await recordToolStarted(deps.db, input, integrationId);
    return await executeCall({ deps, handler, input, ctx, heartbeat }, loaded, args, checked, integrationId);
  } finally {
    release?.();
  }
}

interface CallContext<R> {
  deps: ActivityDeps;
  handler: ToolHandler<R>;
  input: ToolActivityInput;
  ctx: Context;
  heartbeat: () => void;
}

async function executeCall<R>(
  { deps, handler, input, ctx, heartbeat }: CallContext<R>, loaded: { integration?: Integration }, args: Record<string, unknown>,
  checked: CheckedCall<R> | RejectedCall, integrationId: string | undefined,
): Promise<ToolOutcome> {
  const logFields = { ...handler.logFields?.(args), ...(isRejected(checked) ? {} : checked.logFields) };
  const log = deps.logger.child({ runId: input.runId, toolCallId: input.toolCallId, tool: input.name, type: input.type, integrationId });
  const started = Date.now();
  const metadata = {
    toolType: input.type, toolCallId: input.toolCallId, turn: input.turn, ...logFields, ...(integrationId ? { integrationId } : {}),
  };
  let result: ToolResult;
  try {
    result = await traceToolCall(input, handler.span(input), args, metadata, async () => {
      if (isRejected(checked)) return { status: checked.status, content: checked.content };
      log.info(logFields, 'tool call started');
      return handler.execute(checked.request, {
        input, deps, log, signal: ctx.cancellationSignal, heartbeat, integration: loaded.integration,
        waitingForPerson: personWaits(ctx, input.toolCallId, log),
      });
    });
  } catch (err) {
    log.warn({ durationMs: Date.now() - started, err: (err as Error)?.message }, 'tool call interrupted');
    throw err;
  }
  const durationMs = Date.now() - started;
  const pending = pendingOutcome(result, log, durationMs);
  if (pending) return pending;
  if (result.status === 'ok') log.info({ durationMs }, 'tool call succeeded');
  else log.warn({ durationMs, error: shortened(result.content, 500) }, 'tool call failed');
  const outcome = await keepTrying(ctx, log, () => storeToolResult(deps.db, input, { ...result, integrationId, durationMs }));
  // Once: a retried activity finds this result stored and returns it without counting.
  const integration = loaded.integration?.name ?? input.route?.integrationName
    ?? (isRejected(checked) ? undefined : checked.integrationName);
  deps.metrics?.toolCallEnded({ integration, type: input.type, outcome: result.status, seconds: durationMs / 1000 });
  return result.sampled ? { ...outcome, sampled: result.sampled } : outcome;
}

/**
 * A call that has no answer yet: the workflow waits for its server's questions, polls its task, runs
 * its sub-agent, or waits for its caller.
 */
function pendingOutcome(result: ToolResult, log: Logger, durationMs: number): ToolOutcome | undefined {
  if (result.waiting) {
    log.info({ durationMs, roundId: result.waiting.roundId }, 'tool call waits for input');
    return { status: 'ok', resultBytes: 0, waiting: result.waiting };
  }
  if (result.task) {
    log.info({ durationMs, taskRefId: result.task.taskRefId }, 'tool call runs as a task');
    return { status: 'ok', resultBytes: 0, task: result.task };
  }
  if (result.child) {
    log.info({ childRunId: result.child.runId }, 'sub-agent run recorded; the workflow starts it');
    return { status: 'ok', resultBytes: 0, child: result.child };
  }
  if (result.caller) {
    log.info({ durationMs }, 'caller tool call stored; the run waits for its caller');
    return { status: 'ok', resultBytes: 0, caller: result.caller };
  }
  return undefined;
}

/** A native tool's arguments against its schema first: the contract's texts for what is missing or malformed. */
async function checkCall<R>(
  handler: ToolHandler<R>, args: Record<string, unknown>, input: ToolActivityInput, deps: ActivityDeps,
): Promise<CheckedCall<R> | RejectedCall> {
  if (!handler.native) return handler.check(args, input, deps);
  const parsed = parseToolArguments(handler.native.tool, args);
  if (!parsed.ok) return { status: 'error', content: handler.native.tool.failureText(parsed.message) };
  return handler.check(parsed.args, input, deps);
}

/** How long a produced result waits for the database to come back; well inside every tool activity's bound. */
const STORE_PATIENCE_MS = 60_000;

/**
 * Once a tool has answered, its result must not be lost to a database outage: a retried activity
 * would run the tool again (or, for a tool that may not repeat, tell the LLM it failed). So the
 * store is retried here, heartbeating, while the database is unreachable.
 */
async function keepTrying<T>(ctx: Context, log: Logger, store: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + STORE_PATIENCE_MS;
  for (let delay = 250; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      return await store();
    } catch (err) {
      if (!isUnreachableDb(err) || Date.now() + delay > giveUpAt || ctx.cancellationSignal.aborted) throw err;
      log.warn({ err: (err as Error).message, retryInMs: delay }, 'database unreachable; keeping the tool result and retrying');
      ctx.heartbeat();
      await ctx.sleep(delay);
    }
  }
}

/**
 * The tool activities by the names workflows/tool-kinds.ts uses, and recordToolResult, which
 * stores an answer the workflow decided itself: an unknown tool, or an activity that gave up
 * (unless the call had stored its result first: then that result stands).
 */
export function createToolCallActivities<H extends Record<string, AnyToolHandler>>(deps: ActivityDeps, handlers: H) {
  const withSlots = { ...deps, toolSlots: deps.toolSlots ?? new ToolSlots(new TenantSlotCaps(deps.db)) };
  const activities = Object.fromEntries(Object.entries(handlers).map(([name, handler]) => [name, toolActivity(withSlots, handler)]));
  return {
    ...(activities as { [K in keyof H]: (input: ToolActivityInput) => Promise<ToolOutcome> }),
    async recordToolResult(input: ToolActivityInput & ToolResult): Promise<ToolOutcome> {
      const { status, content, route, ...ref } = input;
      // A call whose activity gave up may have stored its result before its worker died: that result stands.
      const { stored } = await findToolCallAndRequest(deps.db, ref.runId, ref.turn, ref.index + 1);
      if (stored) return storedOutcome(stored, Object.values(handlers));
      const outcome = await storeToolResult(deps.db, ref, { status, content, integrationId: route?.integrationId, durationMs: 0 });
      deps.metrics?.toolCallEnded({ integration: route?.integrationName, type: ref.type, outcome: status, seconds: 0 });
      return outcome;
    },
  };
}
