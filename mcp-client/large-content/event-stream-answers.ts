import { MessageBytes } from './message-bytes';
import { SpoolingMessage } from './spooling-message';

/**
 * An event stream from an MCP server passed on one whole event at a time, each up to the bound,
 * with a resource's large contents taken out of its data on the way (spooling-message.ts). An
 * event's lines other than data pass as they came; its data lines are read as one message and go
 * on as one `data:` line. Several data lines are joined with a space (JSON whitespace), not with the
 * line feed the event-stream format joins them with, so that the message stays on one line.
 */

export interface EventLimits {
  /** bound on what one event holds in memory */
  bound: number;
  /** bound on the decoded contents one event's message spools */
  maxContentBytes: number;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const DATA = Buffer.from('data:');

type LineKind = 'start' | 'data' | 'other';

/** `refuse` ends the stream in place of an event past its bounds, or whose contents could not be spooled (see mcp-client/transports/http-answers.ts). */
export function eventStream(body: ReadableStream<Uint8Array>, limits: EventLimits,
  refuse: (controller: ReadableStreamDefaultController<Uint8Array>, reader: ReadableStreamDefaultReader<Uint8Array>, failure?: string) => Promise<void>,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const data = new SpoolingMessage(limits.maxContentBytes);
  const other = new MessageBytes();
  let kind: LineKind = 'start';
  /** the start of a line, until it tells whether it is a data line */
  let prefix: number[] = [];
  let dataLines = 0;
  let skipSpace = false;
  let afterCr = false;
  let ready: Buffer[] = [];
  let refused = false;
  let failure: string | undefined;

  const size = () => data.size + other.size + prefix.length;
  const endEvent = () => {
    if (dataLines === 0 && other.size === 0) return;
    if (data.overBound || data.failure) {
      refused = true;
      failure ??= data.failure;
      data.clear();
    }
    if (refused) return;
    const kept = dataLines > 0 ? data.take() : undefined;
    ready.push(Buffer.concat([other.join(), ...(kept ? [DATA, Buffer.from(' '), kept, Buffer.from('\n')] : []), Buffer.from('\n')]));
    other.clear();
    dataLines = 0;
  };
  const endLine = () => {
    if (kind === 'start') {
      if (prefix.length === 0) endEvent();
      else if (Buffer.from(prefix).equals(DATA.subarray(0, 4))) dataLines++;
      else other.push(Buffer.from([...prefix, LF]));
    } else if (kind === 'data') {
      dataLines++;
    } else {
      other.push(Buffer.from([LF]));
    }
    prefix = [];
    kind = 'start';
  };
  const startData = () => {
    kind = 'data';
    skipSpace = true;
    // Lines after the first join the message with a space.
    if (dataLines > 0) data.push(Buffer.from(' '));
  };

  function read(chunk: Buffer): void {
    const n = chunk.length;
    for (let i = 0; i < n;) {
      if (afterCr) {
        afterCr = false;
        if (chunk[i] === LF) {
          i++;
          continue;
        }
      }
      const c = chunk[i];
      if (kind === 'start') {
        i++;
        if (c === LF || c === CR) {
          afterCr = c === CR;
          endLine();
          continue;
        }
        prefix.push(c);
        if (prefix.length === DATA.length && Buffer.from(prefix).equals(DATA)) {
          prefix = [];
          startData();
        } else if (c !== DATA[prefix.length - 1]) {
          kind = 'other';
          other.push(Buffer.from(prefix));
          prefix = [];
        }
        continue;
      }
      if (kind === 'data' && skipSpace) {
        skipSpace = false;
        if (c === SPACE) {
          i++;
          continue;
        }
      }
      const lf = chunk.indexOf(LF, i);
      const cr = chunk.indexOf(CR, i);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      const part = chunk.subarray(i, end === -1 ? n : end);
      if (kind === 'data') data.push(part);
      else other.push(part);
      if (end === -1) return;
      afterCr = chunk[end] === CR;
      i = end + 1;
      endLine();
    }
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const next = await reader.read();
        if (next.done) {
          if (kind !== 'start' || prefix.length > 0) endLine();
          endEvent();
          for (const event of ready) controller.enqueue(event);
          controller.close();
          return;
        }
        read(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
        const sent = ready.length > 0;
        for (const event of ready) controller.enqueue(event);
        ready = [];
        if (refused || data.overBound || data.failure || size() > limits.bound) {
          failure ??= data.failure;
          data.clear();
          return refuse(controller, reader, failure);
        }
        if (sent) {
          // Something went on: the reader asks again when it wants more.
          return;
        }
      }
    },
    cancel: (reason) => {
      data.clear();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
