import type { JSONRPCMessage } from '@modelcontextprotocol/client';

/**
 * The bound on one message from an MCP server, over stdio and HTTP alike: a message past it is
 * not kept, and the request it answers gets an error response of ours with this code and text.
 */

/** JSON-RPC error code we give a response the transport refused for its size (in the implementation-defined range). */
export const MESSAGE_TOO_LARGE = -32_099;

/**
 * A resource of maxResourceBytes arrives as JSON: escaped text (quotes in a CSV double) or base64 (4/3).
 * Up to this bound the message is parsed and its decoded size checked exactly; past it the
 * transport drops it unparsed, so a runaway server cannot exhaust the worker's memory. A tool
 * result's bound follows from maxResultBytes the same way.
 */
export const transportBound = (maxBytes: number) => 2 * maxBytes + 1024 * 1024;

/** `size` is unknown when the connection was cut before the message ended (HTTP). */
export function messageTooLargeText(bound: number, size?: number): string {
  return `message of ${size ?? `more than ${bound}`} bytes exceeds the transport bound of ${bound} bytes`;
}

/** The answer a request gets in place of a response the transport refused. */
export function tooLargeAnswer(id: string | number, bound: number, size?: number): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error: { code: MESSAGE_TOO_LARGE, message: messageTooLargeText(bound, size) } };
}

/** JSON-RPC error code we give a response whose resource contents could not be written to their spool file. */
export const CONTENT_NOT_KEPT = -32_098;

/** The answer a request gets in place of a response whose contents could not be spooled (no room on the disk). */
export function notKeptAnswer(id: string | number, reason: string): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error: { code: CONTENT_NOT_KEPT, message: `the worker could not keep the resource's contents: ${reason}` } };
}
