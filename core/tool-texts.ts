/**
 * The exact texts the LLM sees when a tool call goes wrong (contract: docs/tools.md, "Texts the LLM reads").
 * Pure, so that workflow code may import it: the workflow answers unknown tools and activities that gave up.
 */
export const toolResultText = {
  unknownTool: (name: string) =>
    `A tool with the name ${name} was not found. Only use tools that are available in your given list of tools.`,
  mcpToolFailed: (message: string) => `MCP tool execution failed: ${message}`,
  mcpToolTimedOut: (ms: number) => `MCP tool execution failed: timed out after ${ms} ms`,
  mcpToolUnexpected: (message: string) => `MCP tool execution failed unexpectedly: ${message}`,
  mcpToolMissingIntegration: () => 'MCP tool configuration error: missing integration ID',
  /** an OAuth-protected server without (working) authorization; the tool call's text is mcpToolFailed of it */
  needsAuthorization: (integrationName: string) => `integration ${integrationName} needs authorization; an operator must authorize it`,
  resourceFailed: (message: string) => `Resource retrieval failed: ${message}`,
  promptFailed: (message: string) => `Prompt retrieval failed: ${message}`,
  sourceQueryFailed: (message: string) => `Source query failed: ${message}`,
};

/** What the run object keeps of a tool result. */
export const RESULT_PREVIEW_BYTES = 2048;

/** Cuts a string to at most maxBytes of UTF-8 without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const size = utf8Length(ch);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += ch.length;
  }
  return text.slice(0, end);
}

export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
