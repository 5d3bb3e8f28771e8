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
