/** Durations as operators write them in settings: "1500ms", "90s", "10m", "1h". */
const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const DURATION = /^(\d{1,9})(ms|s|m|h)$/;

export const DURATION_PATTERN = DURATION.source;

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  return m ? Number(m[1]) * UNITS[m[2]] : undefined;
}

/** The largest unit that states the duration exactly. */
export function formatDuration(ms: number): string {
  for (const unit of ['h', 'm', 's'] as const) {
    if (ms >= UNITS[unit] && ms % UNITS[unit] === 0) return `${ms / UNITS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
