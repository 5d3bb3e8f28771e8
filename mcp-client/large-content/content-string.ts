import { JsonStringDecoder } from './json-string-decoder';

export type ContentField = 'text' | 'blob';

/** Where a large content string goes once it passes the threshold. */
export interface ContentSink {
  begin(field: ContentField): void;
  /** decoded bytes, in a buffer reused after the call */
  write(bytes: Buffer): void;
  /** the string ended: the JSON string content to keep in its place */
  end(): string;
  /** the string is not valid JSON: what was written is dropped */
  abort(): void;
}

/**
 * One content string of a message as it is read (content-scanner.ts): its raw bytes are held
 * while they stay under the threshold; past it they go, decoded, to the sink (a spool file), and
 * the message keeps the sink's placeholder in their place. A string that is not valid JSON throws
 * JsonStringError.
 */
export class ContentString {
  private held: Buffer[] = [];
  /** the raw bytes held in memory (all of the string, while under the threshold) */
  heldBytes = 0;
  private decoder: JsonStringDecoder | undefined;

  constructor(private readonly threshold: number, private readonly sink: ContentSink, private readonly field: ContentField) {}

  /** Whether the string goes to the sink, so that its closing quote is found by decoding it. */
  get spooled(): boolean {
    return this.decoder !== undefined;
  }

  /** A piece of the string that holds no closing quote. */
  push(piece: Buffer): void {
    if (this.decoder) {
      this.decoder.push(piece);
      return;
    }
    this.held.push(Buffer.from(piece));
    this.heldBytes += piece.length;
    if (this.heldBytes <= this.threshold) return;
    this.sink.begin(this.field);
    this.decoder = new JsonStringDecoder((bytes) => this.sink.write(bytes));
    for (const part of this.held) this.decoder.push(part);
    this.held = [];
    this.heldBytes = 0;
  }

  /** A spooled string, decoded up to its closing quote (see JsonStringDecoder.decodeUntilQuote). */
  decodeUntilQuote(chunk: Buffer, from: number): number {
    return this.decoder!.decodeUntilQuote(chunk, from);
  }

  /** The string closed: what the message keeps in its place, its own bytes or the sink's placeholder. */
  end(): Buffer[] {
    if (!this.decoder) {
      const held = this.held;
      this.held = [];
      this.heldBytes = 0;
      return held;
    }
    this.decoder.end();
    this.decoder = undefined;
    return [Buffer.from(this.sink.end())];
  }

  /** Drops whatever the sink holds of the string. */
  abandon(): void {
    if (this.decoder) this.sink.abort();
    this.decoder = undefined;
    this.held = [];
    this.heldBytes = 0;
  }
}
