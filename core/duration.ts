/** Durations as operators write them in settings: "1500ms", "90s", "10m", "24h", "7d". Pure: workflow code may import it. */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^([0-9]{1,10})(ms|s|m|h|d)$/;

/** The same rule for JSON schemas; each setting checks its own bounds after parsing. */
export const DURATION_PATTERN = DURATION.source;

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text);
  return m ? Number(m[1]) * UNIT_MS[m[2]] : undefined;
}

/** The largest unit that states the duration exactly. */
export function formatDuration(ms: number): string {
  for (const unit of ['h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
