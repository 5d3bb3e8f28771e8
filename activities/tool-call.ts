import { ApplicationFailure, Context } from '@temporalio/activity';
import type { SubAgentRoute } from '../core/sub-agents';
import { endedSeqOf, type ChildRun, type InputWait, type McpToolRoute, type SampledDuringCall, type ToolCallRef, type ToolOutcome, type ToolTask } from '../core/tool-call';
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
import { parseToolArguments, type NativeTool } from '../core/native-tools';
import { traceToolCall } from '../platform/tracing/run-trace';
import type { ActivityDeps } from './deps';
import { personWaits, type PersonWaits } from './person-waits';
import type { DiscoverySnapshot } from './run-snapshots';
import { isPlainObject } from '../core/plain-object';

/** Every tool activity takes this: the call by reference, and for an MCP tool its route. */
export interface ToolActivityInput extends ToolCallRef {
  route?: McpToolRoute;
  /** a sub-agent's call: which agent, and the root run whose descendants are bounded */
  subAgent?: SubAgentRoute & { rootRunId: string; maxDescendants?: number };
  /** a call coming back with the answers to a stored round of its server's questions (by reference) */
  resume?: { roundId: string };
  /** the run's step cursor when the call was dispatched: a 2025-era server's sampling requests play the steps from here */
  step?: number;
}

/** A tool call's answer to the LLM: what it says, and whether it says the call failed. */
export interface Verdict {
  status: 'ok' | 'error';
  content: string;
  importedDataSource?: boolean;
  /** no answer yet: the server's questions are stored, and the workflow waits for their answers */
  waiting?: InputWait;
  /** the model answered the server's sampling requests during the call (2025 era): the run adds this */
  sampled?: SampledDuringCall;
  /** no answer yet: the server runs the call as a task, which the workflow polls */
  task?: ToolTask;
  /** no answer yet: the sub-agent's run is recorded, and the workflow runs it */
  child?: ChildRun;
}

/** A call its check refused, with the integration it named when that was found. */
export type Refusal = Verdict & { integrationId?: string };

export interface CheckedCall<R> {
  request: R;
  integrationId?: string;
  /** what the log line and the trace span say about the call, besides its arguments */
  about: Record<string, unknown>;
}

/** What a tool's own code gets while it runs. */
export interface ToolRun {
  input: ToolActivityInput;
  deps: ActivityDeps;
  log: Logger;
  signal: AbortSignal;
  heartbeat: () => void;
  /** a routed call's integration, as read with the call: undefined if it no longer exists */
  integration?: Integration;
  /** in an activity: starts a wait for a person's answer inside the call, so that the run is listed as waiting */
  waitingForPerson?: PersonWaits;
}

/** What an LLM turn knows when it describes the native tools. */
export interface DefinitionContext {
  deps: ActivityDeps;
  threadId: string;
  integrations: DiscoverySnapshot['integrations'];
  /** whether the thread may have data sources: false only when the workflow knows it has none */
  hasDataSources: boolean;
}

/**
 * One kind of tool, as activities see it: only what is its own. Everything every tool call does
 * (load by reference, replay a stored result, events, log, timer, trace, heartbeat, store) is
 * toolActivity's, once.
 */
export interface ToolHandler<R, A = Record<string, unknown>> {
  /**
   * A native tool's declaration (core/native-tools.ts: its name and the schema its arguments are
   * checked against before `check` sees them), and what the LLM is told about it this turn; MCP
   * tools describe themselves.
   */
  native?: {
    tool: NativeTool<A>;
    describe: (ctx: DefinitionContext) => Promise<string> | string;
  };
  span: (input: ToolActivityInput) => string;
  /** checks the arguments against the run (its integrations, its data): a problem is a verdict */
  check: (args: A, input: ToolActivityInput, deps: ActivityDeps) => Promise<CheckedCall<R> | Refusal>;
  /** what the log line and the trace span say about any call, whatever its check found */
  about?: (args: Record<string, unknown>) => Record<string, unknown>;
  /** runs the call; the tool's own failures are verdicts, a throw is transient and retried by Temporal */
  execute: (request: R, run: ToolRun) => Promise<Verdict>;
  /** what an outcome stored before a crash says beyond status and size; every handler is asked, so check `stored.type` */
  restored?: (stored: ToolCallRecord) => Partial<ToolOutcome>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds handlers of every request type
export type AnyToolHandler = ToolHandler<any, any>;

/** Well inside the 10 s heartbeat timeout the workflow sets, so a live call is never mistaken for a dead worker. */
const HEARTBEAT_EVERY_MS = 3_000;

const isVerdict = <R>(c: CheckedCall<R> | Refusal): c is Refusal => 'status' in c;

/**
 * The call by reference: either the outcome already stored for it (the worker died after storing
 * but before reporting: the tool must not run again), or the call with its arguments. A routed
 * call (an MCP tool) names its integration before any check: the integration's row comes with the
 * call, and the call's start is recorded in the same statement.
 */
async function loadToolCall(db: Queryable, input: ToolActivityInput): Promise<{ stored: ToolCallRecord } | { call: ToolCall; integration?: Integration; startRecorded: boolean }> {
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
function storedOutcome(stored: ToolCallRecord, handlers: AnyToolHandler[]): ToolOutcome {
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
  db: Queryable, ref: ToolCallRef, result: Verdict & { integrationId?: string; durationMs: number; childRunId?: string; alsoWrite?: Write[] },
): Promise<ToolOutcome> {
  const resultBytes = utf8Length(result.content);
  await writeTogether(db, [
    eventWrite(ref.runId, ref.eventSeq, 'tool_call_started', startedData(ref, result.integrationId)),
    runMessageWrite(ref.runId, ref.turn, ref.index + 1, { role: 'tool', toolCallId: ref.toolCallId, name: ref.name, content: result.content }),
    toolCallWrite(ref.runId, {
      id: ref.toolCallId, turn: ref.turn, slot: ref.index + 1, name: ref.name, type: ref.type,
      integrationId: result.integrationId ?? null, status: result.status, durationMs: result.durationMs,
      result: truncateUtf8(result.content, RESULT_PREVIEW_BYTES), resultBytes, ...(result.childRunId ? { childRunId: result.childRunId } : {}),
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
export function toolActivity<R>(deps: ActivityDeps, handler: ToolHandler<R>) {
  return async (input: ToolActivityInput): Promise<ToolOutcome> => {
    const ctx = Context.current();
    const heartbeat = () => ctx.heartbeat();
    // From the start: on a starved worker the bookkeeping below alone can outlast the heartbeat timeout.
    const timer = setInterval(heartbeat, HEARTBEAT_EVERY_MS);
    try {
      return await runToolCall(deps, handler, input, ctx, heartbeat);
    } finally {
      clearInterval(timer);
    }
  };
}

async function runToolCall<R>(
  deps: ActivityDeps, handler: ToolHandler<R>, input: ToolActivityInput, ctx: Context, heartbeat: () => void,
): Promise<ToolOutcome> {
  const { db, logger } = deps;
  const loaded = await loadToolCall(db, input);
  if ('stored' in loaded) return storedOutcome(loaded.stored, [handler]);
  const args = isPlainObject(loaded.call.arguments) ? loaded.call.arguments : {};
  const checked = await checkCall(handler, args, input, deps);
  // A routed call's integration is its route's.
  const integrationId = input.route?.integrationId ?? checked.integrationId;
  if (!loaded.startRecorded) await recordToolStarted(db, input, integrationId);

  const about = { ...handler.about?.(args), ...(isVerdict(checked) ? {} : checked.about) };
  const log = logger.child({ runId: input.runId, toolCallId: input.toolCallId, tool: input.name, type: input.type, integrationId });
  const started = Date.now();
  const metadata = { toolType: input.type, toolCallId: input.toolCallId, turn: input.turn, ...about, ...(integrationId ? { integrationId } : {}) };
  let verdict: Verdict;
  try {
    verdict = await traceToolCall(input, handler.span(input), args, metadata, async () => {
      if (isVerdict(checked)) return { status: checked.status, content: checked.content };
      log.info(about, 'tool call started');
      return handler.execute(checked.request, {
        input, deps, log, signal: ctx.cancellationSignal, heartbeat, integration: loaded.integration, waitingForPerson: personWaits(ctx, input.toolCallId, log),
      });
    });
  } catch (err) {
    log.warn({ durationMs: Date.now() - started, err: (err as Error)?.message }, 'tool call interrupted');
    throw err;
  }
  const durationMs = Date.now() - started;
  if (verdict.waiting) {
    log.info({ durationMs, roundId: verdict.waiting.roundId }, 'tool call waits for input');
    return { status: 'ok', resultBytes: 0, waiting: verdict.waiting };
  }
  if (verdict.task) {
    log.info({ durationMs, taskRefId: verdict.task.taskRefId }, 'tool call runs as a task');
    return { status: 'ok', resultBytes: 0, task: verdict.task };
  }
  if (verdict.child) {
    log.info({ childRunId: verdict.child.runId }, 'sub-agent run recorded; the workflow starts it');
    return { status: 'ok', resultBytes: 0, child: verdict.child };
  }
  if (verdict.status === 'ok') log.info({ durationMs }, 'tool call succeeded');
  else log.warn({ durationMs, error: shortened(verdict.content, 500) }, 'tool call failed');
  const outcome = await keepTrying(ctx, log, () => storeToolResult(db, input, { ...verdict, integrationId, durationMs }));
  return verdict.sampled ? { ...outcome, sampled: verdict.sampled } : outcome;
}

/** A native tool's arguments against its schema first: the contract's texts for what is missing or malformed. */
async function checkCall<R>(handler: ToolHandler<R>, args: Record<string, unknown>, input: ToolActivityInput, deps: ActivityDeps): Promise<CheckedCall<R> | Refusal> {
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
  const activities = Object.fromEntries(Object.entries(handlers).map(([name, handler]) => [name, toolActivity(deps, handler)]));
  return {
    ...(activities as { [K in keyof H]: (input: ToolActivityInput) => Promise<ToolOutcome> }),
    async recordToolResult(input: ToolActivityInput & Verdict): Promise<ToolOutcome> {
      const { status, content, route, ...ref } = input;
      // A call whose activity gave up may have stored its result before its worker died: that result stands.
      const { stored } = await findToolCallAndRequest(deps.db, ref.runId, ref.turn, ref.index + 1);
      if (stored) return storedOutcome(stored, Object.values(handlers));
      return storeToolResult(deps.db, ref, { status, content, integrationId: route?.integrationId, durationMs: 0 });
    },
  };
}
