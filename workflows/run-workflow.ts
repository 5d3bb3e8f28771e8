import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import {
  DEFAULT_CONTINUE_AS_NEW_BYTES,
  runStateQuery,
  type DiscoveryResult,
  type RunContext,
  type RunContinuation,
  type RunError,
  type RunOutcome,
  type RunState,
  type RunWorkflowInput,
  type ToolCallRef,
  type ToolOutcome,
} from './definitions';
import { runStatusKey } from './search-attributes';
import {
  nativeToolsFor, routeToolCall, type McpToolRoute, type ToolAvailability, type ToolRoute,
} from './tool-routing';
import { toolResultText } from './tool-results';

type Activities = ReturnType<typeof createActivities>;

/** Short bookkeeping against our own database. */
const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
});

/** An LLM turn heartbeats while it waits, so a dead worker is noticed within the heartbeat timeout. */
const llm = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 },
});

/** The final commit must happen, even after a cancel: more attempts, never cancelled. */
const finishing = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30 },
});

/**
 * Tool dispatch by route type. The MCP issues register their activities here; a type
 * without a dispatcher answers through recordToolResult.
 */
type Dispatcher = (ref: ToolCallRef, route: ToolRoute) => Promise<ToolOutcome>;
const dispatchers: Partial<Record<string, Dispatcher>> = {
  mcp_tool: (ref, route) => callMcpTool(ref, route as McpToolRoute),
  mcp_prompt: (ref) => viaNativeActivity(ref, 'mcp_prompt', 'mcp-prompt-activity', promptActivities.retrievePrompt, toolResultText.promptFailed),
  mcp_resource: (ref) => viaNativeActivity(ref, 'mcp_resource', 'mcp-resource-activity', resourceActivities.retrieveResource, toolResultText.resourceFailed),
  source_query: (ref) => viaNativeActivity(ref, 'source_query', 'source-query-activity', sourceQueryActivities.sourceQuery, toolResultText.sourceQueryFailed),
};

/** Used when a route predates the timeout fields; matches the integrations table's default. */
const DEFAULT_MCP_TOOL_TIMEOUT_MS = 60_000;
/** Room above the MCP request's own bound for connecting (with its in-activity retries) and storing the result. */
const MCP_ACTIVITY_MARGIN_MS = 90_000;

/**
 * An MCP tool call gets its own activity options: its timeout follows the integration's, so the
 * MCP request always gives up before Temporal does and the LLM gets the contract timeout text.
 * A tool may have side effects, so it runs once unless its server is trusted to say it is safe to repeat.
 */
function callMcpTool(ref: ToolCallRef, route: McpToolRoute): Promise<ToolOutcome> {
  const toolTimeoutMs = route.toolTimeoutMs ?? DEFAULT_MCP_TOOL_TIMEOUT_MS;
  const totalTimeoutMs = route.totalTimeoutMs ?? toolTimeoutMs;
  const where = route.integrationName ?? route.integrationId;
  const { callMcpTool: call } = proxyActivities<Activities>({
    activityId: `mcp:${ref.turn}:${ref.index}:${ref.name}`,
    ...(route.taskQueue ? { taskQueue: route.taskQueue } : {}),
    summary: `MCP tool ${route.toolName} on ${where}`,
    startToCloseTimeout: totalTimeoutMs + MCP_ACTIVITY_MARGIN_MS,
    heartbeatTimeout: '10s',
    retry: route.retryable
      ? { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 }
      : { maximumAttempts: 1 },
  });
  return call({ ...ref, integrationId: route.integrationId!, toolName: route.toolName, toolTimeoutMs, totalTimeoutMs });
}

/** prompts/get is a read: safe to retry. Its MCP request is bounded at 60 s, plus up to 30 s to connect. */
const promptActivities = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 },
});

/**
 * resources/read is a read, and a CSV import replaces its table atomically, so both are safe to
 * retry. A 256 MiB CSV takes minutes to import: the activity heartbeats, so a dead worker is
 * noticed within the heartbeat timeout, not at the end of the long start-to-close bound.
 */
const resourceActivities = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 },
});

/**
 * A source query is read-only, so a lost database connection is retried. Its statement (and the
 * row count after it) are each bounded by statement_timeout, at most a minute apiece by config.
 */
const sourceQueryActivities = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 },
});

/**
 * retrieve_mcp_prompt, retrieve_mcp_resource and source_query are served by their own activities. Runs that started
 * before those existed answered them through recordToolResult, hence the patch markers.
 */
async function viaNativeActivity(
  ref: ToolCallRef, type: 'mcp_prompt' | 'mcp_resource' | 'source_query', patchId: string,
  call: (ref: ToolCallRef) => Promise<ToolOutcome>, failed: (message: string) => string,
): Promise<ToolOutcome> {
  if (!patched(patchId)) {
    return bookkeeping.recordToolResult({ ...ref, type, status: 'error', content: toolResultText.unknownTool(ref.name) });
  }
  try {
    return await call(ref);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return bookkeeping.recordToolResult({ ...ref, type, status: 'error', content: failed(describeFailure(err).message) });
  }
}

/**
 * Integrations pinned to a task queue are discovered by a worker of that queue, the only kind
 * that can start their servers; their routes carry the queue so that their calls go there too.
 */
async function discoverPinned(runId: string, discovery: DiscoveryResult): Promise<void> {
  const found = await Promise.all((discovery.pinned ?? []).map(({ integrationId, taskQueue }) => proxyActivities<Activities>({
    taskQueue,
    startToCloseTimeout: '1 minute',
    summary: `MCP discovery of ${integrationId} on ${taskQueue}`,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 },
  }).discoverPinnedIntegration({ runId, integrationId })));
  for (const result of found) {
    Object.assign(discovery.mcpRoutes, result.mcpRoutes);
    discovery.unreachable.push(...result.unreachable);
  }
  discovery.integrationCount += found.length;
}

export async function runWorkflow(input: RunWorkflowInput): Promise<RunOutcome> {
  const previous = input.continued;
  const state: RunState = {
    runId: input.runId,
    status: 'running',
    stopReason: null,
    turns: previous?.turns ?? 0,
    usage: previous?.usage ?? { inputTokens: 0, outputTokens: 0 },
    toolCallCount: previous?.toolCallCount ?? 0,
    lastTextPreview: previous?.lastTextPreview ?? '',
    error: null,
    eventSeq: previous?.eventSeq ?? 2,
  };
  setHandler(runStateQuery, () => state);
  const nextEventSeq = (count: number) => {
    const seq = state.eventSeq;
    state.eventSeq += count;
    return seq;
  };

  let context: RunContext | undefined = previous?.context;
  let tools: ToolAvailability | undefined = previous && {
    mcpRoutes: previous.mcpRoutes,
    integrationCount: previous.integrationCount,
    hasDataSources: previous.hasDataSources,
  };

  let continuation: RunContinuation | undefined;
  let cancelled: unknown;
  try {
    if (!context || !tools) {
      context = await bookkeeping.loadRunContext({ runId: input.runId });
      const discovery = await bookkeeping.discoverCapabilities({ runId: input.runId, integrationIds: context.integrationIds });
      if (discovery.pinned?.length && patched('pinned-integrations')) await discoverPinned(input.runId, discovery);
      await bookkeeping.buildPromptPrefix({ runId: input.runId, agentId: context.agentId, integrationIds: context.integrationIds });
      tools = { mcpRoutes: discovery.mcpRoutes, integrationCount: discovery.integrationCount, hasDataSources: context.hasDataSources };
    }
    const ctx = context;
    const avail = tools;

    let answered = false;
    while (state.turns < ctx.maxTurns) {
      const turn = state.turns + 1;
      const reply = await llm.llmTurn({
        runId: input.runId, threadId: ctx.threadId, agentId: ctx.agentId, turn,
        nativeTools: nativeToolsFor(avail), eventSeq: nextEventSeq(2),
      });
      state.turns = turn;
      state.usage = {
        inputTokens: state.usage.inputTokens + reply.usage.inputTokens,
        outputTokens: state.usage.outputTokens + reply.usage.outputTokens,
      };
      state.lastTextPreview = reply.textPreview;
      if (reply.toolCalls.length === 0) {
        answered = true;
        break;
      }

      const outcomes = await Promise.all(reply.toolCalls.map((call, index) => {
        const ref: ToolCallRef = {
          runId: input.runId, threadId: ctx.threadId, turn, index,
          toolCallId: call.id, name: call.name, eventSeq: nextEventSeq(2),
        };
        return dispatchToolCall(ref, avail);
      }));
      state.toolCallCount += outcomes.length;
      if (outcomes.some((o) => o.importedDataSource)) avail.hasDataSources = true;

      const info = workflowInfo();
      const historyBytes = input.continueAsNewAtHistoryBytes ?? DEFAULT_CONTINUE_AS_NEW_BYTES;
      // A cancel that arrived during this turn must not be lost to continue-as-new.
      if ((info.historySize >= historyBytes || info.continueAsNewSuggested) && state.turns < ctx.maxTurns
        && !CancellationScope.current().consideredCancelled) {
        continuation = {
          turns: state.turns, eventSeq: state.eventSeq, usage: state.usage, toolCallCount: state.toolCallCount,
          lastTextPreview: state.lastTextPreview, context: ctx, mcpRoutes: avail.mcpRoutes,
          integrationCount: avail.integrationCount, hasDataSources: avail.hasDataSources,
        };
        break;
      }
    }
    if (!continuation) {
      state.status = 'completed';
      state.stopReason = answered ? 'answer' : 'max_turns';
    }
  } catch (err) {
    if (isCancellation(err)) {
      cancelled = err;
      state.status = 'cancelled';
      state.stopReason = 'cancelled';
    } else {
      state.status = 'failed';
      state.stopReason = 'error';
      state.error = describeFailure(err);
    }
  }

  if (continuation) {
    return await continueAsNew<typeof runWorkflow>({ ...input, continued: continuation });
  }

  const finalStatus = state.status === 'running' ? 'failed' : state.status;
  await CancellationScope.nonCancellable(async () => {
    upsertSearchAttributes([{ key: runStatusKey, value: finalStatus }]);
    await finishing.finishRun({
      runId: input.runId,
      threadId: context?.threadId ?? '',
      agentId: context?.agentId ?? '',
      status: finalStatus,
      stopReason: state.stopReason ?? 'error',
      error: state.error,
      turns: state.turns,
      usage: state.usage,
      eventSeq: nextEventSeq(1),
    });
  });
  const { eventSeq: _seq, ...outcome } = state;
  // Rethrowing the cancellation ends the workflow as Canceled in Temporal, after the outcome is committed.
  if (cancelled) throw cancelled;
  return outcome;
}

async function dispatchToolCall(ref: ToolCallRef, tools: ToolAvailability): Promise<ToolOutcome> {
  const route = routeToolCall(ref.name, tools);
  if (route.type === 'unknown') {
    return bookkeeping.recordToolResult({ ...ref, type: 'unknown', status: 'error', content: toolResultText.unknownTool(ref.name) });
  }
  if (route.type === 'mcp_tool' && !route.integrationId) {
    return bookkeeping.recordToolResult({ ...ref, type: 'mcp_tool', status: 'error', content: toolResultText.mcpToolMissingIntegration() });
  }
  const dispatcher = dispatchers[route.type];
  if (!dispatcher) {
    return bookkeeping.recordToolResult({ ...ref, type: route.type, status: 'error', content: toolResultText.unknownTool(ref.name) });
  }
  try {
    return await dispatcher(ref, route);
  } catch (err) {
    if (isCancellation(err)) throw err;
    // A tool activity that gave up still owes the LLM a result; a failed tool never fails the run.
    const message = describeFailure(err).message;
    const integrationId = route.type === 'mcp_tool' ? route.integrationId : undefined;
    return bookkeeping.recordToolResult({
      ...ref, type: route.type, integrationId, status: 'error', content: toolResultText.mcpToolUnexpected(message),
    });
  }
}

function describeFailure(err: unknown): RunError {
  let cause: unknown = err;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? 'ApplicationFailure', message: cause.message };
  if (cause instanceof Error) return { type: cause.name, message: cause.message };
  return { type: 'Error', message: String(cause) };
}
