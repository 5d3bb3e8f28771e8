import { Context } from '@temporalio/activity';
import { findIntegration } from '../core/db/integrations';
import { getSnapshot } from '../core/db/run-store';
import type { DiscoveredIntegration } from '../core/mcp/discover';
import { formatPromptResult } from '../core/mcp/prompt-text';
import { traceToolCall } from '../core/tracing/run-trace';
import type { ToolCallRef, ToolOutcome } from '../workflows/definitions';
import { toolResultText } from '../workflows/tool-results';
import type { ActivityDeps } from './deps';
import type { DiscoverySnapshot } from './discovery';
import { SNAPSHOT } from './run-context';
import { loadToolCall, recordToolStarted, storedOutcome, storeToolResult } from './tool-results';

/** The tracing span of a retrieval (seed 000); logs carry the name too. */
export const PROMPT_RETRIEVAL_SPAN = 'mcp_prompt_retrieval';
/** prompts/get is a read, not a long job: bounded well inside the activity's timeout, whatever the integration allows tools. */
const MAX_PROMPT_TIMEOUT_MS = 60_000;
const HEARTBEAT_EVERY_MS = 3_000;

type Verdict = { status: 'ok' | 'error'; content: string };
const failed = (message: string): Verdict => ({ status: 'error', content: toolResultText.promptFailed(message) });
const bareMessage = (err: unknown) => String((err as Error)?.message ?? err).replace(/^MCP error -?\d+: /, '');
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** MCP prompt arguments are strings; an LLM may send numbers or booleans, which mean the same. */
function stringArguments(args: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  return out;
}

/** The integration, by id or by name, among this run's integrations only: the LLM may not reach others. */
function resolveIntegration(integrations: DiscoveredIntegration[], ref: string): DiscoveredIntegration | undefined {
  return integrations.find((i) => i.id === ref) ?? integrations.find((i) => i.name === ref);
}

interface Request {
  integrationId: string;
  promptName: string;
  arguments: Record<string, string>;
  /** from the listing: many servers (the SDK's McpServer among them) leave it out of prompts/get */
  listedDescription?: string;
}

/** Checks the call against the contract schema and the prompt's declared arguments; a problem is a verdict, not a throw. */
function checkRequest(params: Record<string, unknown>, integrations: DiscoveredIntegration[]): { request: Request; integration: DiscoveredIntegration } | Verdict {
  const { integrationId, promptName } = params;
  if (typeof integrationId !== 'string' || !integrationId.trim()) return failed('integrationId parameter is required');
  if (typeof promptName !== 'string' || !promptName.trim()) return failed('promptName parameter is required');
  if (params.arguments !== undefined && params.arguments !== null && !isPlainObject(params.arguments)) {
    return failed('arguments must be an object of argument names to values');
  }
  const integration = resolveIntegration(integrations, integrationId);
  if (!integration) return failed(`integration ${integrationId} is not available to this agent`);
  if (integration.status === 'unreachable') return failed(`integration ${integration.name} is unreachable (${integration.error ?? 'no answer'})`);
  const prompt = integration.prompts.find((p) => p.name === promptName);
  if (!prompt) {
    const names = integration.prompts.map((p) => p.name).join(', ') || 'none';
    return failed(`prompt ${promptName} was not found on integration ${integration.name} (available prompts: ${names})`);
  }
  const args = stringArguments(isPlainObject(params.arguments) ? params.arguments : {});
  const missing = (prompt.arguments ?? []).filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
  if (missing.length > 0) return failed(`missing required arguments: ${missing.join(', ')}`);
  return { request: { integrationId: integration.id, promptName, arguments: args, listedDescription: prompt.description }, integration };
}

export function createRetrievePromptActivities(deps: ActivityDeps) {
  const { db, logger, mcpPool } = deps;

  async function fetchPrompt(request: Request, signal: AbortSignal): Promise<Verdict> {
    const integration = await findIntegration(db, request.integrationId);
    if (!integration) return failed(`integration ${request.integrationId} does not exist`);
    if (!integration.enabled) return failed(`integration ${integration.name} is disabled`);
    // Only workers of a pinned integration's queue may start its server; its prompts are not routed there yet.
    if (integration.taskQueue) return failed(`integration ${integration.name} is pinned to task queue ${integration.taskQueue}, and only its tools can be used`);
    try {
      const result = await mcpPool.withClient(integration, (client) => client.getPrompt(
        { name: request.promptName, arguments: request.arguments },
        { timeout: Math.min(integration.toolTimeoutMs, MAX_PROMPT_TIMEOUT_MS), signal },
      ));
      const description = result.description ?? request.listedDescription;
      return { status: 'ok', content: formatPromptResult(request.promptName, { ...result, description }) };
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      return failed(bareMessage(err));
    }
  }

  return {
    /** retrieve_mcp_prompt: gets one prompt and returns it to the LLM as the contract text. Failures are text too. */
    async retrievePrompt(ref: ToolCallRef): Promise<ToolOutcome> {
      const { runId, turn } = ref;
      const loaded = await loadToolCall(db, ref);
      if ('stored' in loaded) return storedOutcome(loaded.stored);
      const { call } = loaded;

      const discovery = await getSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery);
      const checked = checkRequest(isPlainObject(call.arguments) ? call.arguments : {}, discovery?.integrations ?? []);
      const integrationId = 'request' in checked ? checked.request.integrationId : undefined;
      await recordToolStarted(db, ref, 'mcp_prompt', integrationId);
      const log = logger.child({ runId, toolCallId: ref.toolCallId, span: PROMPT_RETRIEVAL_SPAN });
      const started = Date.now();
      const spanMetadata = { integrationId: integrationId ?? call.arguments?.integrationId, promptName: call.arguments?.promptName, operationType: 'prompt_retrieval', toolCallId: ref.toolCallId, turn };
      const verdict = await traceToolCall(ref, PROMPT_RETRIEVAL_SPAN, call.arguments, spanMetadata, async (): Promise<Verdict> => {
        if (!('request' in checked)) return checked;
        const { request } = checked;
        log.info({ integrationId, promptName: request.promptName, hasArguments: Object.keys(request.arguments).length > 0 }, 'Retrieving MCP prompt');
        const ctx = Context.current();
        const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
        try {
          return await fetchPrompt(request, ctx.cancellationSignal);
        } finally {
          clearInterval(heartbeat);
        }
      });
      const durationMs = Date.now() - started;
      const meta = { integrationId, promptName: call.arguments?.promptName, status: verdict.status, durationMs };
      if (verdict.status === 'ok') log.info(meta, 'MCP prompt retrieval succeeded');
      else log.warn({ ...meta, error: verdict.content }, 'MCP prompt retrieval failed');
      return storeToolResult(db, ref, { type: 'mcp_prompt', integrationId, status: verdict.status, content: verdict.content, durationMs });
    },
  };
}
