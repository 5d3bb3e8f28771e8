import { ContentScanner } from './content-scanner';
import { MessageBytes } from './message-bytes';
import { MessageSpools } from './spool-files';

/** A content string longer than this goes to a spool file as it arrives (see content-scanner.ts). */
export const SPOOL_THRESHOLD_BYTES = 1 << 20;

/**
 * The bytes of one message from an MCP server as they arrive, with the large contents of a
 * resources/read result taken out to spool files on the way (stdio lines and HTTP answers alike).
 * `size` is what is held in memory, which the transport bound applies to; the contents' decoded
 * bytes are bounded by `maxContentBytes` (the integration's maxResourceBytes): past it the
 * message is `overBound` and its request is answered with the transport's too-large error.
 */
export class SpoolingMessage {
  private readonly kept = new MessageBytes();
  private spools: MessageSpools;
  private scanner: ContentScanner;

  constructor(private readonly maxContentBytes: number, private readonly threshold = SPOOL_THRESHOLD_BYTES) {
    this.spools = new MessageSpools(maxContentBytes);
    this.scanner = this.newScanner();
  }

  get size(): number {
    return this.kept.size + this.scanner.heldBytes;
  }

  get overBound(): boolean {
    return this.spools.overBound;
  }

  /** Why its contents could not be spooled, if so: the message is refused. */
  get failure(): string | undefined {
    return this.spools.failure;
  }

  /** The message's JSON-RPC id, as far as it was read. */
  get id(): string | number | undefined {
    return this.scanner.id;
  }

  push(part: Uint8Array): void {
    this.scanner.push(Buffer.isBuffer(part) ? part : Buffer.from(part.buffer, part.byteOffset, part.byteLength));
  }

  head(n: number): Buffer {
    return this.kept.head(n);
  }

  /** The message is complete: its bytes to pass on, and its spools are offered to whoever reads the result. */
  take(): Buffer {
    const bytes = this.kept.join();
    this.spools.offer();
    this.reset();
    return bytes;
  }

  /** Drops the message and its spool files. */
  clear(): void {
    this.scanner.abandon();
    this.spools.discard();
    this.reset();
  }

  private reset(): void {
    this.kept.clear();
    this.spools = new MessageSpools(this.maxContentBytes);
    this.scanner = this.newScanner();
  }

  private newScanner(): ContentScanner {
    const spools = this.spools;
    return new ContentScanner(this.threshold, (bytes) => this.kept.push(bytes), spools);
  }
}
