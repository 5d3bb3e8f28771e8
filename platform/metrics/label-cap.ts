/** What a label value beyond the cap, or an empty one, is counted as. */
export const OTHER_LABEL_VALUE = 'other';
export const NO_LABEL_VALUE = 'none';

/** Label values are names an operator chose; past this length they are cut, so one name cannot bloat a scrape. */
const MAX_LABEL_VALUE_CHARS = 128;

/**
 * Bounds the values of each label of each metric: the first `maxValues` distinct values are kept,
 * every later one is counted as `other`. Names (agents, integrations) are made by API callers, so
 * without a bound a caller could grow the process's memory and every scrape without end.
 */
export class LabelCap {
  private readonly kept = new Map<string, Set<string>>();

  constructor(private readonly maxValues: number) {}

  value(metric: string, label: string, raw: string | undefined | null): string {
    if (!raw) return NO_LABEL_VALUE;
    const value = raw.length > MAX_LABEL_VALUE_CHARS ? raw.slice(0, MAX_LABEL_VALUE_CHARS) : raw;
    const key = `${metric}\u0000${label}`;
    let values = this.kept.get(key);
    if (!values) {
      values = new Set();
      this.kept.set(key, values);
    }
    if (values.has(value)) return value;
    if (values.size >= this.maxValues) return OTHER_LABEL_VALUE;
    values.add(value);
    return value;
  }
}
