import { Context } from '@temporalio/activity';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { findIntegration } from '../core/db/integrations';
import type { McpPool } from '../core/mcp/pool';
import { toolResultContentText } from '../core/mcp/tool-result-text';
import { mcpToolSpanName, traceToolCall } from '../core/tracing/run-trace';
import type { McpToolCallInput, ToolOutcome } from '../workflows/definitions';
import { toolResultText } from '../workflows/tool-results';
import type { ActivityDeps } from './deps';
import { loadToolCall, recordToolStarted, storedOutcome, storeToolResult } from './tool-results';

/** Spawn or connect failures happen before the request is sent, so retrying them cannot repeat a side effect. */
const CONNECT_ATTEMPTS = 3;
const CONNECT_BACKOFF_MS = 500;
/** Well inside the 10 s heartbeat timeout the workflow sets, so a live call is never mistaken for a dead worker. */
const HEARTBEAT_EVERY_MS = 3_000;

interface Verdict {
  status: 'ok' | 'error';
  content: string;
}

/** "MCP error -32602: Invalid arguments" → "Invalid arguments": the LLM needs the server's words, not the envelope. */
const bareMessage = (err: unknown) => String((err as Error)?.message ?? err).replace(/^MCP error -?\d+: /, '');

function timeoutMs(err: McpError, fallback: number): number {
  const data = (err.data ?? {}) as { timeout?: unknown; maxTotalTimeout?: unknown };
  const ms = data.maxTotalTimeout ?? data.timeout;
  return typeof ms === 'number' ? ms : fallback;
}

/** Classifies a failure once, at the activity boundary, into the contract texts. */
function failureVerdict(err: unknown, requestTimeoutMs: number): Verdict {
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
    return { status: 'error', content: toolResultText.mcpToolTimedOut(timeoutMs(err, requestTimeoutMs)) };
  }
  // -32000 is the SDK's own "Connection closed": the server died or the stream dropped.
  if (err instanceof McpError && err.code !== ErrorCode.ConnectionClosed) {
    return { status: 'error', content: toolResultText.mcpToolFailed(bareMessage(err)) };
  }
  return { status: 'error', content: toolResultText.mcpToolUnexpected(bareMessage(err)) };
}

async function execute(pool: McpPool, input: McpToolCallInput, args: Record<string, unknown>, deps: ActivityDeps): Promise<Verdict> {
  const integration = await findIntegration(deps.db, input.integrationId);
  if (!integration) return { status: 'error', content: toolResultText.mcpToolUnexpected(`integration ${input.integrationId} does not exist`) };
  if (!integration.enabled) return { status: 'error', content: toolResultText.mcpToolUnexpected(`integration ${integration.name} is disabled`) };

  const ctx = Context.current();
  const signal = ctx.cancellationSignal;
  // Progress notifications restart the per-request timer; it must never outlast the whole-call bound.
  const requestTimeoutMs = Math.min(input.toolTimeoutMs, input.totalTimeoutMs);
  for (let attempt = 1; ; attempt++) {
    let sent = false;
    try {
      const result = await pool.withClient(integration, (client) => {
        sent = true;
        return client.callTool({ name: input.toolName, arguments: args }, undefined, {
          timeout: requestTimeoutMs,
          maxTotalTimeout: input.totalTimeoutMs,
          resetTimeoutOnProgress: true,
          onprogress: () => ctx.heartbeat(),
          signal,
        });
      });
      const text = toolResultContentText(result);
      return 'isError' in result && result.isError ? { status: 'error', content: toolResultText.mcpToolFailed(text) } : { status: 'ok', content: text };
    } catch (err) {
      // A cancel and a timeout both surface as -32001: the signal tells them apart.
      if (signal.aborted) throw signal.reason ?? err;
      if (!sent && attempt < CONNECT_ATTEMPTS) {
        deps.logger.warn({ integrationId: integration.id, attempt, err: bareMessage(err) }, 'MCP connect failed; retrying');
        await new Promise((r) => setTimeout(r, CONNECT_BACKOFF_MS * attempt));
        continue;
      }
      return failureVerdict(err, requestTimeoutMs);
    }
  }
}

export function createMcpToolActivities(deps: ActivityDeps) {
  const { db, logger, mcpPool } = deps;
  return {
    /** Calls one MCP tool. The arguments are read by reference; the full result goes to run_messages. */
    async callMcpTool(input: McpToolCallInput): Promise<ToolOutcome> {
      const { runId, turn, integrationId, toolName } = input;
      const loaded = await loadToolCall(db, input);
      if ('stored' in loaded) return storedOutcome(loaded.stored);
      const { call } = loaded;

      await recordToolStarted(db, input, 'mcp_tool', integrationId);
      const log = logger.child({ runId, integrationId, tool: toolName, toolCallId: input.toolCallId });
      log.info('MCP tool call started');
      const started = Date.now();
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      let verdict: Verdict;
      try {
        const metadata = { toolName, exposedName: input.name, integrationId, toolType: 'mcp', toolCallId: input.toolCallId, turn };
        verdict = await traceToolCall(input, mcpToolSpanName(toolName), call.arguments ?? {}, metadata,
          () => execute(mcpPool, input, call.arguments ?? {}, deps));
      } catch (err) {
        log.info({ durationMs: Date.now() - started }, 'MCP tool call cancelled');
        throw err;
      } finally {
        clearInterval(heartbeat);
      }
      const durationMs = Date.now() - started;
      const level = verdict.status === 'ok' ? 'info' : 'warn';
      log[level]({ status: verdict.status, durationMs }, verdict.status === 'ok' ? 'MCP tool call succeeded' : 'MCP tool call failed');
      return storeToolResult(db, input, { type: 'mcp_tool', integrationId, status: verdict.status, content: verdict.content, durationMs });
    },
  };
}
