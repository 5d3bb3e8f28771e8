import type { DataSource } from '../../store/data-sources';
import type { SourceQuerySupport } from './thread-role';

/** Bounds the listing: a thread with hundreds of tables or a 1,600-column CSV must not fill the context. */
const MAX_TABLES = 50;
const MAX_COLUMNS = 100;

/**
 * What the source_query description adds: the thread's tables with their columns and row counts, so
 * the LLM can write SQL without guessing names; or why the tool cannot be used. Pure.
 */
export function sourceCatalogue(
  sources: DataSource[], support: SourceQuerySupport, limits: { defaultRows: number; maxRows: number; maxBytes: number },
): string {
  if (!support.enabled) return `\n\nThis tool is unavailable here: ${support.reason}.`;
  const rules = `\n\nWrite PostgreSQL. Refer to tables by their bare names. Results are capped at ${limits.defaultRows} rows`
    + ` (pass limit for up to ${limits.maxRows}) and about ${Math.round(limits.maxBytes / 1024)} KB, then "… N more rows":`
    + ' aggregate rather than page.';
  if (sources.length === 0) {
    return `${rules}\n\nThis thread has no data sources yet: import a CSV resource with retrieve_mcp_resource first.`;
  }
  const lines = sources.slice(0, MAX_TABLES).map((s) => {
    const columns = s.columns.slice(0, MAX_COLUMNS).map((c) => `${c.name} (${c.type})`).join(', ');
    const moreColumns = s.columns.length > MAX_COLUMNS ? `, … and ${s.columns.length - MAX_COLUMNS} more columns` : '';
    return `- ${s.tableName} (${s.rowCount} rows, from ${s.uri}): ${columns}${moreColumns}`;
  });
  if (sources.length > MAX_TABLES) lines.push(`- … and ${sources.length - MAX_TABLES} more tables`);
  return `${rules}\n\nData sources of this thread:\n${lines.join('\n')}`;
}
