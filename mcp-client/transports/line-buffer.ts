import { deserializeMessage } from '@modelcontextprotocol/client';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { messageTooLargeText, notKeptAnswer, tooLargeAnswer } from './message-bound';
import { SpoolingMessage } from '../large-content/spooling-message';

/** Enough of a dropped line's ends to find its JSON-RPC id, wherever the server's serialiser put it. */
const EDGE_BYTES = 256;

/**
 * Newline-delimited JSON-RPC from a stdio server, with a bound on one message.
 *
 * The SDK's ReadBuffer concatenates the whole buffer on every chunk (quadratic for a 100 MB
 * resource) and throws past 10 MiB, which would lose the message with no answer to its request.
 * Here chunks are joined once per message, and a message over the bound is skipped up to its
 * newline and answered with an error for its id, so the caller gets an answer and the connection
 * (and the server process) stays up. A resource's large content goes to a spool file as it arrives
 * (mcp-client/large-content/spooling-message.ts); past `maxContentBytes` its request is answered
 * with the same error.
 */
export class LineBuffer {
  private readonly line: SpoolingMessage;
  /** bytes of the line being dropped (the kept bytes are counted by `line`) */
  private droppedSize = 0;
  private dropping = false;
  private head: Buffer = Buffer.alloc(0);
  private tail: Buffer = Buffer.alloc(0);

  constructor(private readonly maxMessageBytes: number, maxContentBytes = maxMessageBytes) {
    this.line = new SpoolingMessage(maxContentBytes);
  }

  /** Appends a chunk and returns the complete messages (and synthetic errors) it finished. */
  push(chunk: Buffer, onBadLine: (err: Error) => void): JSONRPCMessage[] {
    const out: JSONRPCMessage[] = [];
    let rest = chunk;
    for (let nl = rest.indexOf(0x0a); ; nl = rest.indexOf(0x0a)) {
      const part = nl === -1 ? rest : rest.subarray(0, nl);
      this.add(part);
      if (nl === -1) break;
      const message = this.finish(onBadLine);
      if (message) out.push(message);
      rest = rest.subarray(nl + 1);
    }
    return out;
  }

  clear(): void {
    this.line.clear();
    this.droppedSize = 0;
    this.dropping = false;
    this.head = Buffer.alloc(0);
    this.tail = Buffer.alloc(0);
  }

  private add(part: Buffer): void {
    if (part.length === 0) return;
    if (!this.dropping && this.line.size + part.length > this.maxMessageBytes) {
      // Copies of the edges, never views: a view would keep what it was cut from alive until the next refusal.
      this.head = this.line.head(EDGE_BYTES);
      this.droppedSize = this.line.size;
      this.line.clear();
      this.dropping = true;
    }
    if (this.dropping) {
      this.droppedSize += part.length;
      if (this.head.length < EDGE_BYTES) this.head = Buffer.concat([this.head, part.subarray(0, EDGE_BYTES - this.head.length)]);
      this.tail = Buffer.concat([this.tail, part.subarray(-EDGE_BYTES)]).subarray(-EDGE_BYTES);
    } else {
      this.line.push(part);
    }
  }

  private finish(onBadLine: (err: Error) => void): JSONRPCMessage | undefined {
    const dropped = this.dropping;
    const failure = dropped ? undefined : this.line.failure;
    const overBound = !dropped && (this.line.overBound || failure !== undefined);
    const size = dropped ? this.droppedSize : this.line.size;
    const contentId = this.line.id;
    const line = dropped || overBound ? '' : this.line.take().toString('utf8').replace(/\r$/, '');
    const headText = this.head.toString('latin1');
    const tailText = this.tail.toString('latin1');
    this.clear();
    if (overBound) {
      if (contentId === undefined) {
        onBadLine(new Error('a message\'s resource contents exceed the resource bound; it had no id and was dropped'));
        return undefined;
      }
      return failure ? notKeptAnswer(contentId, failure) : tooLargeAnswer(contentId, this.maxMessageBytes);
    }
    if (dropped) {
      // Our SDK's servers write the id last, others first: the tail is searched first, for its last match.
      const idPattern = /"id"\s*:\s*(\d+|"(?:[^"\\]|\\.)*")\s*[,}]/g;
      const id = [...tailText.matchAll(idPattern)].pop()?.[1] ?? [...headText.matchAll(idPattern)][0]?.[1];
      if (id === undefined) {
        onBadLine(new Error(`${messageTooLargeText(this.maxMessageBytes, size)}; it had no id and was dropped`));
        return undefined;
      }
      return tooLargeAnswer(JSON.parse(id) as string | number, this.maxMessageBytes, size);
    }
    if (line.trim() === '') return undefined;
    try {
      return deserializeMessage(line);
    } catch (err) {
      onBadLine(err as Error);
      return undefined;
    }
  }
}
