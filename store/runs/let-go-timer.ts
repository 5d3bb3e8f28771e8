/**
 * When to let go of what nobody wants any more: `lingerMs` after the last watch or listener went,
 * so that streams opened one after another do not each cost a LISTEN. Armed once something is
 * unwanted; when it fires early (something went since it was armed) it waits out the rest.
 */
export class LetGoTimer {
  private timer: NodeJS.Timeout | undefined;
  /** when a watch or a listener last went */
  private releasedAt = 0;
  private due = false;

  constructor(private readonly lingerMs: number, private readonly onDue: () => void) {}

  released(): void {
    this.releasedAt = Date.now();
  }

  /** Starts the wait, unless one is under way. */
  arm(): void {
    if (!this.timer) this.armFor(this.lingerMs);
  }

  /** Whether the wait has run out since last asked; asking resets it. */
  takeDue(): boolean {
    const due = this.due;
    this.due = false;
    return due;
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private armFor(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const left = this.releasedAt + this.lingerMs - Date.now();
      if (left > 0) return this.armFor(left);
      this.due = true;
      this.onDue();
    }, ms);
    this.timer.unref();
  }
}
