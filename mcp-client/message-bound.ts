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

/** Up to this size a message's bytes are kept as the chunks they came in. */
const SMALL_MESSAGE_BYTES = 1024 * 1024;
/**
 * Past SMALL_MESSAGE_BYTES they are copied into blocks this large, which the C allocator maps
 * each on its own and hands back to the system when they are freed. Kept as they came, the 64 KiB
 * chunks of a pipe or socket stay in its free lists: a refused 250 MiB message left the worker's
 * RSS 250 MiB higher for good. Pages of a block not written to take no memory.
 */
const BLOCK_BYTES = 64 * 1024 * 1024;

/** The bytes of one message as they arrive, joined once when it is complete. */
export class MessageBytes {
  private parts: Buffer[] = [];
  private inBlocks = false;
  private blockUsed = 0;
  size = 0;

  push(part: Uint8Array): void {
    const bytes = Buffer.isBuffer(part) ? part : Buffer.from(part.buffer, part.byteOffset, part.byteLength);
    if (!this.inBlocks && this.size + bytes.length > SMALL_MESSAGE_BYTES) {
      const chunks = this.parts;
      this.parts = [];
      this.inBlocks = true;
      for (const chunk of chunks) this.copyIn(chunk);
    }
    if (this.inBlocks) this.copyIn(bytes);
    else this.parts.push(bytes);
    this.size += bytes.length;
  }

  /** One buffer of all the bytes (every block but the last is full, so the total cuts only the last). */
  join(): Buffer {
    return this.parts.length === 1 && !this.inBlocks ? this.parts[0] : Buffer.concat(this.parts, this.size);
  }

  /** A copy of the first `n` bytes, which keeps nothing else alive. */
  head(n: number): Buffer {
    return Buffer.concat(this.parts, Math.min(n, this.size));
  }

  clear(): void {
    this.parts = [];
    this.inBlocks = false;
    this.blockUsed = 0;
    this.size = 0;
  }

  private copyIn(bytes: Buffer): void {
    let rest = bytes;
    while (rest.length > 0) {
      if (this.parts.length === 0 || this.blockUsed === BLOCK_BYTES) {
        this.parts.push(Buffer.allocUnsafeSlow(BLOCK_BYTES));
        this.blockUsed = 0;
      }
      const copied = rest.copy(this.parts[this.parts.length - 1], this.blockUsed);
      this.blockUsed += copied;
      rest = rest.subarray(copied);
    }
  }
}
