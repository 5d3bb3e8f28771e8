/**
 * The model's words as they come, in pieces: a CR at the end of one piece may open a CRLF that the
 * next one ends, so it is held back until the next piece (or the end) says which it is.
 */
export class LiveText {
  private heldCr = false;

  /** what to write of this piece (control characters are escaped when written) */
  push(piece: string): string {
    const text = (this.heldCr ? '\r' : '') + piece;
    this.heldCr = text.endsWith('\r');
    return this.heldCr ? text.slice(0, -1) : text;
  }

  /** what is left to write once the text ends: a lone CR, escaped */
  end(): string {
    const rest = this.heldCr ? '\r' : '';
    this.heldCr = false;
    return rest;
  }
}
