/**
 * MCP error texts. The v1 SDK's McpError prefixed its message with `MCP error <code>: `, and a v1
 * server (many servers still run v1) sends that prefixed message over the wire, so a client sees
 * `MCP error -32602: Unknown prompt`; the v2 ProtocolError adds none. Every place that turns an MCP failure into
 * text for a person or an LLM goes through mcpErrorText.
 */

const MCP_ERROR_PREFIX = /^(?:MCP error -?\d+: )+/;

/** The message of an MCP failure without any number of `MCP error <code>: ` prefixes. */
export function mcpErrorText(err: unknown): string {
  // JSON.parse quotes the start of what it could not read, which is the server's answer: no text shows that.
  if ((err as { name?: unknown } | undefined)?.name === 'SyntaxError') return "the server's answer is not valid JSON";
  const message = err instanceof Error ? err.message : typeof (err as { message?: unknown })?.message === 'string'
    ? (err as { message: string }).message : String(err);
  return message.replace(MCP_ERROR_PREFIX, '');
}

/**
 * An error our own MCP servers throw from a request handler: the SDK sends `message` and `code`
 * as they are, so the client shows the code once (an McpError would carry its prefix on the wire).
 */
export function mcpRequestError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}
