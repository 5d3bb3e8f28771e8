import type { Client } from '@modelcontextprotocol/client';
import type { McpToolRoute } from '../../core/tool-call';
import { toolResultText } from '../../core/tool-texts';
import { idempotencyMeta } from '../../core/tool-call-ids';
import { mcpErrorText } from '../../core/mcp-error-text';
import { isAuthorizationRequired } from '../../mcp-client/oauth/oauth-provider';
import { callToolInRounds, callToolRound, type RoundsOutcome } from '../../mcp-client/tool-calls/input-rounds';
import type { ToolDefinition } from '../../core/messages';
import { mcpToolSpanName } from '../../platform/tracing/run-trace';
import type { DiscoverySnapshot } from '../run-snapshots';
import type { ToolHandler, ToolRun, ToolResult } from '../tool-handler';
import type { Integration } from '../../core/integration';
import { callClock, elicitationHandler, requestTimedOut } from './elicitation';
import { samplingHandler, type SamplingLedger } from './sampling';
import { answersDelivered, roundReply, storeQuestions, type ResumedRound } from './durable-questions';
import { integrationUsable } from './usable-integration';
import { resultOfFailure, resultOfCall, unexpected } from './mcp-results';
import { startTaskCall } from './mcp-task';

/** Spawn or connect failures happen before the request is sent, so retrying them cannot repeat a side effect. */
const CONNECT_ATTEMPTS = 3;
const CONNECT_BACKOFF_MS = 500;

/**
 * The call as sent: every tools/call of it (each retry, each round of a 2026-era call) carries the
 * same idempotency key, `<runId>/<toolCallId>`, for a server that deduplicates by it.
 */
const callParams = (route: McpToolRoute, args: Record<string, unknown>, run: ToolRun) =>
  ({ name: route.toolName, arguments: args, _meta: idempotencyMeta(run.input.runId, run.input.toolCallId) });

/** What a 2025-era server's sampling requests did during the call, set once its handler exists. */
interface DuringCall {
  sampling?: SamplingLedger;
}

async function callTool(route: McpToolRoute, args: Record<string, unknown>, run: ToolRun): Promise<ToolResult> {
  const integration = integrationUsable(run.integration, route.integrationId, { pinnedAllowed: true });
  if (typeof integration === 'string') return unexpected(integration);
  // Read once, before any connect attempt.
  const resumed = run.input.resume ? await roundReply(run, run.input.resume.roundId) : undefined;
  if (resumed && 'status' in resumed) return resumed;
  // A server that runs the tool as a task: the call asks for one, and the workflow polls it.
  const asTask = route.task && !resumed ? await startTaskCall(integration, route, args, run) : undefined;
  if (asTask && asTask !== 'asks first') return asTask;
  const during: DuringCall = {};
  const result = await callWithRetries(integration, route, args, run, resumed, during);
  // A throw (the worker's end, a cancel) keeps them: a retry of a tool safe to repeat carries them again.
  if (run.input.resume) await answersDelivered(run, run.input.resume.roundId);
  const ledger = during.sampling;
  if (!ledger || (ledger.steps === 0 && !ledger.refusal)) return result;
  const sampled = { usage: ledger.usage, steps: ledger.steps, ...(ledger.costUsd > 0 ? { costUsd: ledger.costUsd } : {}) };
  // A reviewer's denial, or a model that failed for good, is what the LLM reads, whatever the server made of it.
  return ledger.refusal ? { status: 'error', content: ledger.refusal, sampled } : { ...result, sampled };
}

async function callWithRetries(
  integration: Integration, route: McpToolRoute, args: Record<string, unknown>, run: ToolRun,
  resumed: ResumedRound | undefined, during: DuringCall,
): Promise<ToolResult> {
  const { signal } = run;
  // Progress notifications restart the per-request timer; it must never outlast the whole-call bound.
  const requestTimeoutMs = Math.min(route.toolTimeoutMs, route.totalTimeoutMs);
  for (let attempt = 1; ; attempt++) {
    let sent = false;
    try {
      const send = (client: Client) => {
        sent = true;
        return callToolInRounds(client, callParams(route, args, run), {
          timeout: requestTimeoutMs,
          maxTotalTimeout: route.totalTimeoutMs,
          resetTimeoutOnProgress: true,
          onprogress: run.heartbeat,
          signal,
        });
      };
      const outcome = integration.elicitation || integration.sampling !== 'never'
        ? await callWithAsks(integration, route, args, run, () => { sent = true; }, { resumed, during })
        : await run.deps.mcpPool.withClient(integration, send);
      if ('toolResult' in outcome) return outcome.toolResult;
      if ('abandoned' in outcome) return { status: 'error', content: outcome.abandoned };
      return resultOfCall(outcome.result, integration);
    } catch (err) {
      // A cancel and a timeout both surface as -32001: the signal tells them apart.
      if (signal.aborted) throw signal.reason ?? err;
      if (!sent && attempt < CONNECT_ATTEMPTS && !isAuthorizationRequired(err)) {
        run.log.warn({ attempt, err: mcpErrorText(err) }, 'MCP connect failed; retrying');
        await new Promise((r) => setTimeout(r, CONNECT_BACKOFF_MS * attempt));
        continue;
      }
      return resultOfFailure(err, requestTimeoutMs, Boolean(resumed));
    }
  }
}

/**
 * A call to a server that may ask questions or sampling, on a connection of its own (so a question
 * is this call's). A 2026-era server asks inside the call's result: the requests are stored, the
 * activity ends, and the workflow waits and samples (durable-questions.ts); `resumed` carries the
 * answers back. A 2025-era server asks over the connection, and the call waits here (sampling.ts
 * answers its sampling requests), with bounds of its own that stand still while a question waits
 * for its answer or the model answers, up to the integration's elicitation timeout (which
 * discovery added to the activity's bound). The SDK's own timeout is only the backstop: the whole
 * bound, waits included.
 */
async function callWithAsks(
  integration: Integration, route: McpToolRoute, args: Record<string, unknown>, run: ToolRun, onSent: () => void,
  { resumed, during }: { resumed?: ResumedRound; during: DuringCall },
): Promise<RoundsOutcome | { toolResult: ToolResult }> {
  const budgetMs = Math.min(route.elicitationTimeoutMs ?? 0, integration.elicitationTimeoutMs);
  const requestTimeoutMs = Math.min(route.toolTimeoutMs, route.totalTimeoutMs);
  const timedOut = new AbortController();
  const clock = callClock(requestTimeoutMs, route.totalTimeoutMs, budgetMs, (ms) => timedOut.abort(requestTimedOut(ms)));
  const signal = AbortSignal.any([run.signal, timedOut.signal]);
  const onElicit = integration.elicitation ? elicitationHandler(run, clock, signal) : undefined;
  const sampling = integration.sampling !== 'never' ? samplingHandler(run, integration, clock, signal) : undefined;
  if (sampling) during.sampling = sampling.ledger;
  const options = {
    timeout: route.totalTimeoutMs + budgetMs,
    maxTotalTimeout: route.totalTimeoutMs + budgetMs,
    onprogress: () => {
      clock.progress();
      run.heartbeat();
    },
    signal,
  };
  const params = callParams(route, args, run);
  try {
    const asks = { elicit: onElicit, sample: sampling?.handler };
    return await run.deps.mcpPool.withCallClient(integration, asks, async (client): Promise<RoundsOutcome | { toolResult: ToolResult }> => {
      onSent();
      if (client.getProtocolEra() !== 'modern') return callToolInRounds(client, params, options, onElicit);
      const outcome = await callToolRound(client, params, options, resumed?.reply, { sampling: Boolean(sampling) });
      if (!('asked' in outcome)) return outcome;
      return { toolResult: await storeQuestions(run, integration, outcome.asked, (resumed?.round ?? 0) + 1) };
    });
  } finally {
    clock.stop();
  }
}

/** An MCP tool, called under the name the LLM saw (`<integration>__<tool>`) through the run's route. */
export const mcpTool: ToolHandler<{ route: McpToolRoute; args: Record<string, unknown> }> = {
  span: (input) => mcpToolSpanName(input.route?.toolName ?? input.name),
  check: async (args, input) => {
    if (!input.route?.integrationId) return { status: 'error', content: toolResultText.mcpToolMissingIntegration() };
    const { route } = input;
    const logFields = { toolName: route.toolName, exposedName: input.name, toolType: 'mcp' };
    return { request: { route, args }, integrationId: route.integrationId, logFields };
  },
  execute: ({ route, args }, run) => callTool(route, args, run),
};

/** The discovered MCP tools of reachable integrations, under the names the workflow routes. */
export function mcpToolDefinitions(integrations: DiscoverySnapshot['integrations']): ToolDefinition[] {
  return integrations.flatMap((i) => (i.status !== 'ok' ? [] : i.tools.map((t, k) => ({
    name: i.exposedToolNames[k],
    description: t.description ?? t.title ?? t.name,
    inputSchema: t.inputSchema,
  }))));
}
