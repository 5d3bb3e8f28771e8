import { shortened, shortenedUtf8 } from '../../core/truncated-text';

/**
 * A query result as the LLM reads it: a header, one line per row, cells separated by " | ".
 * Pure: unit-tested directly.
 */
export const NULL_CELL = 'NULL';
/** One huge cell (a JSON document, a long text) must not take the whole byte budget. */
export const MAX_CELL_CHARS = 500;

export interface ResultTable {
  columns: string[];
  /** cells as PostgreSQL printed them (text), NULL as null */
  rows: (string | null)[][];
  /** how many rows the query produced in all (not exact when counting stopped at a bound), or 'uncounted' */
  total: { count: number; exact: boolean } | 'uncounted';
  maxBytes: number;
}

function cell(value: string | null): string {
  if (value === null) return NULL_CELL;
  const flat = value.replace(/\\/g, '\\\\').replace(/\r\n|\r|\n/g, '\\n').replace(/\|/g, '\\|');
  return shortened(flat, MAX_CELL_CHARS + 1);
}

const plural = (n: number) => (n === 1 ? 'row' : 'rows');


export function formatResultTable(t: ResultTable): string {
  // One line within half the byte budget: a table of 1,600 wide columns has a header of that size.
  const lines = [shortenedUtf8(t.columns.map((c) => cell(c)).join(' | '), t.maxBytes / 2)];
  let bytes = Buffer.byteLength(lines[0]) + 1;
  let shown = 0;
  for (const row of t.rows) {
    const line = shortenedUtf8(row.map(cell).join(' | '), t.maxBytes / 2);
    const size = Buffer.byteLength(line) + 1;
    // The first row always goes in (cut to half the budget): a header alone tells the LLM less.
    if (shown > 0 && bytes + size > t.maxBytes) break;
    lines.push(line);
    bytes += size;
    shown++;
  }
  if (t.total === 'uncounted') {
    lines.push('… more rows (too many to count in time)');
    return lines.join('\n');
  }
  const more = Math.max(t.total.count - shown, 0);
  if (more === 0 && t.total.exact) lines.push(`(${shown} ${plural(shown)})`);
  else lines.push(t.total.exact ? `… ${more} more ${plural(more)}` : `… at least ${more} more ${plural(more)}`);
  return lines.join('\n');
}
