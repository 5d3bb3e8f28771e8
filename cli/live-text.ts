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

/**
 * The words of the turn being written, as a terminal shows them. A terminal cannot take words back:
 * after a `text_reset` of the same turn and attempt (a resumed stream sends the text so far again,
 * and so does a worker whose writes fell behind), what follows is written only past what is on
 * screen already. Within an attempt the text only grows, so what is on screen is where it begins.
 */
export class TurnWords {
  private turn = 0;
  private attempt = 0;
  private written = '';
  /** the words come again from their start: how far they have come */
  private again: string | undefined;

  /** a text_reset: true when words of another attempt of this turn are on screen (the model starts again) */
  reset(turn: number, attempt: number): boolean {
    if (turn === this.turn && attempt === this.attempt) {
      this.again = '';
      return false;
    }
    const startsAgain = turn === this.turn && this.written !== '';
    this.begin(turn, attempt);
    return startsAgain;
  }

  /** what to write of a text_delta */
  piece(turn: number, attempt: number, text: string): string {
    if (turn !== this.turn || attempt !== this.attempt) this.begin(turn, attempt);
    if (this.again === undefined) {
      this.written += text;
      return text;
    }
    this.again += text;
    if (this.again.length <= this.written.length) return '';
    const fresh = this.again.slice(this.written.length);
    this.written = this.again;
    this.again = undefined;
    return fresh;
  }

  private begin(turn: number, attempt: number): void {
    this.turn = turn;
    this.attempt = attempt;
    this.written = '';
    this.again = undefined;
  }
}
