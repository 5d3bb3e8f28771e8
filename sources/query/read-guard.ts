import type { Duplex } from 'node:stream';
import type pg from 'pg';

/**
 * The PostgreSQL driver decodes each message inside its socket's 'data' handler: a value or an
 * error text too long for a JS string (a 540 MB `repeat()`, or an error that quotes one) throws
 * there, where nothing can catch it, and the process exits. This guard sits on that handler for
 * connections that run SQL from an LLM: it reads the protocol's framing (a type byte, then a 4-byte
 * length that counts itself) and ends the connection, with ReadTooLargeError, as soon as a message
 * announces more than the bound, before its bytes are buffered; and whatever else the driver throws
 * while reading becomes the connection's error instead of the process's end.
 */
export class ReadTooLargeError extends Error {
  override name = 'ReadTooLargeError';
}

/** Thrown by the driver while it read a message: the connection ends with it, the process goes on. */
export class DriverReadError extends Error {
  override name = 'DriverReadError';
}

/** The framing of a stream of backend messages, fed chunk by chunk: how far into a message we are. */
export function messageSizeWatch(maxMessageBytes: number): (chunk: Buffer) => number | null {
  const header = Buffer.alloc(5);
  let headerBytes = 0;
  /** bytes of the current message's body still to come */
  let bodyLeft = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (bodyLeft > 0) {
        const take = Math.min(bodyLeft, chunk.length - at);
        bodyLeft -= take;
        at += take;
        continue;
      }
      const take = Math.min(5 - headerBytes, chunk.length - at);
      chunk.copy(header, headerBytes, at, at + take);
      headerBytes += take;
      at += take;
      if (headerBytes < 5) break;
      const length = header.readUInt32BE(1);
      headerBytes = 0;
      if (length > maxMessageBytes) return length;
      bodyLeft = Math.max(0, length - 4);
    }
    return null;
  };
}

/** Puts the guard on a connected client's stream (TLS or not: the stream the driver reads). */
export function guardReads(client: pg.Client, maxMessageBytes: number): void {
  const stream = (client as unknown as { connection: { stream: Duplex } }).connection.stream;
  const watch = messageSizeWatch(maxMessageBytes);
  const emit = stream.emit;
  stream.emit = function guardedEmit(this: Duplex, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== 'data') return emit.call(this, event, ...args);
    const chunk = args[0] as Buffer;
    const announced = watch(chunk);
    if (announced !== null) {
      this.destroy(new ReadTooLargeError(`the database's answer holds a message of ${announced} bytes, more than ${maxMessageBytes}`));
      return false;
    }
    try {
      return emit.call(this, event, ...args);
    } catch (err) {
      this.destroy(new DriverReadError((err as Error).message, { cause: err }));
      return false;
    }
  } as Duplex['emit'];
}
