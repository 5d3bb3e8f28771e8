import { EventEmitter, once } from 'node:events';
import fs from 'node:fs/promises';

/**
 * A spool file read while it is written: the resource activity may import a large CSV as it
 * arrives rather than after (docs/data-sources.md, "Large resources"). A caller waits for the next
 * text spool that begins while it alone waits (`watchNextSpool`); what it gets is a guess, since
 * a spool begins before its message's id is read (servers write the id last): the result its
 * request returns must carry the same token, else what was read from it is dropped. Nothing here
 * holds the spool's bytes: the reader reads the file at its own pace.
 */

type Ending = 'complete' | 'gone';

export class LiveSpool extends EventEmitter {
  /** decoded bytes written so far */
  size = 0;
  ending: Ending | undefined;

  constructor(readonly token: string, readonly path: string) {
    super();
  }

  /** @internal the transport's side */
  grew(size: number): void {
    this.size = size;
    this.emit('change');
  }

  /** @internal the transport's side: the string closed ('complete'), or its file was dropped ('gone') */
  ended(ending: Ending): void {
    this.ending ??= ending;
    this.emit('change');
  }

  /**
   * The file's bytes as they are written, in pieces of at most `pieceBytes`; ends when the content
   * string closed, throws when the spool was dropped (over its bound, invalid, its message refused)
   * or `signal` aborts.
   */
  async *pieces(pieceBytes: number, signal?: AbortSignal): AsyncGenerator<Buffer> {
    const handle = await fs.open(this.path, 'r');
    try {
      for (let at = 0; ;) {
        signal?.throwIfAborted();
        if (this.ending === 'gone') throw new Error('the spool was dropped');
        if (at < this.size) {
          const buffer = Buffer.allocUnsafe(Math.min(pieceBytes, this.size - at));
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
          if (bytesRead === 0) throw new Error('the spool file is shorter than written');
          at += bytesRead;
          yield buffer.subarray(0, bytesRead);
        } else if (this.ending === 'complete') {
          return;
        } else {
          await once(this, 'change', signal ? { signal } : {});
        }
      }
    } finally {
      await handle.close();
    }
  }
}

/** Callers waiting for a spool, each with what to call once one begins. */
const waiting = new Set<(spool: LiveSpool) => void>();

/** A watch on the next text spool to begin: `spool` resolves when one does; `stop` ends the wait. */
export interface SpoolWatch {
  spool: Promise<LiveSpool>;
  stop(): void;
}

export function watchNextSpool(): SpoolWatch {
  let taker: ((spool: LiveSpool) => void) | undefined;
  const spool = new Promise<LiveSpool>((resolve) => {
    taker = (s) => {
      waiting.delete(taker!);
      resolve(s);
    };
  });
  waiting.add(taker!);
  return { spool, stop: () => waiting.delete(taker!) };
}

/**
 * @internal the transport's side (spool-files.ts): a text spool begins. It is offered only when one
 * caller alone waits: with two, neither could tell whose it is.
 */
export function spoolBegins(token: string, path: string): LiveSpool | undefined {
  if (waiting.size !== 1) return undefined;
  const live = new LiveSpool(token, path);
  const [take] = waiting;
  take(live);
  return live;
}
