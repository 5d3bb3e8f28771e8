import { shortened } from './truncated-text';

/**
 * MCP error texts. The v1 SDK's McpError prefixed its message with `MCP error <code>: `, and a v1
 * server (many servers still run v1) sends that prefixed message over the wire, so a client sees
 * `MCP error -32602: Unknown prompt`; the v2 ProtocolError adds none. Every place that turns an MCP failure into
 * text for a person or an LLM goes through mcpErrorText.
 */

const MCP_ERROR_PREFIX = /^(?:MCP error -?\d+: )+/;
/** undici's whole message when a request could not be made: why is in its `cause` */
const FETCH_FAILED = 'fetch failed';
const CAUSE_CHARS = 300;

/**
 * The message of an MCP failure without any number of `MCP error <code>: ` prefixes; a fetch that
 * failed says why once, e.g. `fetch failed (connect ECONNREFUSED 127.0.0.1:1234)`.
 */
export function mcpErrorText(err: unknown): string {
  // JSON.parse quotes the start of what it could not read, which is the server's answer: no text shows that.
  if ((err as { name?: unknown } | undefined)?.name === 'SyntaxError') return "the server's answer is not valid JSON";
  const message = messageOf(err).replace(MCP_ERROR_PREFIX, '');
  if (message !== FETCH_FAILED) return message;
  const why = causeText((err as { cause?: unknown }).cause);
  return why ? `${message} (${shortened(why, CAUSE_CHARS)})` : message;
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message
  : typeof (err as { message?: unknown })?.message === 'string' ? (err as { message: string }).message : String(err));

/**
 * Why a connection failed (refused, a name not found, a certificate refused): the cause's message,
 * else its parts' (an AggregateError of each address tried), else its code.
 */
function causeText(cause: unknown, depth = 0): string | undefined {
  if (typeof cause !== 'object' || cause === null || depth > 2) return undefined;
  const { message, code, errors } = cause as { message?: unknown; code?: unknown; errors?: unknown };
  if (typeof message === 'string' && message.trim()) return message.trim();
  const parts = Array.isArray(errors) ? [...new Set(errors.slice(0, 4).map((e) => causeText(e, depth + 1)).filter(Boolean))] : [];
  if (parts.length > 0) return parts.join('; ');
  return typeof code === 'string' ? code : undefined;
}

/**
 * An error our own MCP servers throw from a request handler: the SDK sends `message` and `code`
 * as they are, so the client shows the code once (an McpError would carry its prefix on the wire).
 */
export function mcpRequestError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}
