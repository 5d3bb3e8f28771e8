import { ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import { mcpErrorText } from '../../core/mcp-error-text';
import { toolResultText } from '../../core/tool-texts';
import { isAuthorizationRequired } from '../../mcp-client/oauth/oauth-provider';
import { toolResultContentText } from '../../mcp-client/tool-result-text';
import type { ToolResult } from '../tool-handler';

/**
 * What an MCP tool's call says to the LLM: its result, or its failure in the contract texts. One
 * place, whichever way the call went (at once, or as a task).
 */

export const unexpected = (message: string): ToolResult => ({ status: 'error', content: toolResultText.mcpToolUnexpected(message) });

function timeoutMs(err: SdkError, fallback: number): number {
  const data = (err.data ?? {}) as { timeout?: unknown; maxTotalTimeout?: unknown };
  const ms = data.maxTotalTimeout ?? data.timeout;
  return typeof ms === 'number' ? ms : fallback;
}

/**
 * The one classification of an MCP tool's failure into the contract texts. `resumed`: the call came
 * back with answers to its server's questions.
 */
export function resultOfFailure(err: unknown, requestTimeoutMs: number, resumed?: boolean): ToolResult {
  // A call that came back with answers, refused for its state: the server's state expired meanwhile.
  if (resumed && err instanceof ProtocolError && err.code === -32602) {
    return { status: 'error', content: toolResultText.mcpQuestionExpired() };
  }
  // Not unexpected: the operator knows what to do, and the LLM can go on without this server.
  if (isAuthorizationRequired(err)) return { status: 'error', content: toolResultText.mcpToolFailed(err.message) };
  if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
    return { status: 'error', content: toolResultText.mcpToolTimedOut(timeoutMs(err, requestTimeoutMs)) };
  }
  // A JSON-RPC error answered by the server; the SDK's own failures (connection closed, HTTP) are SdkErrors.
  if (err instanceof ProtocolError) {
    return { status: 'error', content: toolResultText.mcpToolFailed(mcpErrorText(err)) };
  }
  return unexpected(mcpErrorText(err));
}

/** A tool's result as the LLM reads it, within the integration's bound on results. */
export function resultOfCall(result: CallToolResult, integration: Integration): ToolResult {
  const text = toolResultContentText(result);
  // The transport has read the response already; the bound keeps it out of the transcript and every later turn.
  if (Buffer.byteLength(text) > integration.maxResultBytes) {
    return { status: 'error', content: toolResultText.mcpToolFailed(`result exceeds ${integration.maxResultBytes} bytes`) };
  }
  return result.isError ? { status: 'error', content: toolResultText.mcpToolFailed(text) } : { status: 'ok', content: text };
}
