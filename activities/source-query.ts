import { listDataSources } from '../core/db/data-sources';
import { sourceCatalogue } from '../core/sql/source-catalogue';
import type { Db } from '../core/db/pool';
import { runSourceQuery, SOURCE_QUERY_DEFAULTS, type SourceQueryOptions } from '../core/sql/source-query';
import { sourceQuerySupport } from '../core/sql/thread-role';
import type { ToolCallRef, ToolOutcome } from '../workflows/definitions';
import { toolResultText } from '../workflows/tool-results';
import type { ActivityDeps } from './deps';
import { loadToolCall, recordToolStarted, storedOutcome, storeToolResult } from './tool-results';

/** The tracing span this query will become (tracing lands in its own issue); logs carry the name now. */
export const SOURCE_QUERY_SPAN = 'source_query';

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The source_query description's tail for this thread: its tables, or why the tool is off. Two cheap queries a turn. */
export async function describeSourceQuery(db: Db, threadId: string, options?: SourceQueryOptions): Promise<string> {
  const support = await sourceQuerySupport(db);
  const sources = support.enabled ? await listDataSources(db, threadId) : [];
  return sourceCatalogue(sources, support, { ...SOURCE_QUERY_DEFAULTS, ...options });
}

export function createSourceQueryActivities(deps: ActivityDeps) {
  const { db, logger } = deps;
  return {
    /**
     * source_query: one read-only statement over the thread's imported tables, as the thread's own
     * role. Refusals and SQL errors are results for the LLM; a lost database connection is retried.
     */
    async sourceQuery(ref: ToolCallRef): Promise<ToolOutcome> {
      const { runId } = ref;
      const loaded = await loadToolCall(db, ref);
      if ('stored' in loaded) return storedOutcome(loaded.stored);
      const { call } = loaded;

      await recordToolStarted(db, ref, 'source_query');
      const log = logger.child({ runId, toolCallId: ref.toolCallId, threadId: ref.threadId, span: SOURCE_QUERY_SPAN });
      const started = Date.now();
      const outcome = await runSourceQuery(db, ref.threadId, isPlainObject(call.arguments) ? call.arguments : {}, deps.sourceQuery);
      const durationMs = Date.now() - started;
      if (outcome.ok) log.info({ rows: outcome.rowCount, durationMs }, 'source query succeeded');
      // The SQL is logged on refusal: an operator wants to see what an injected prompt tried.
      else log.warn({ error: outcome.message, sql: String(call.arguments?.sql ?? '').slice(0, 2000), durationMs }, 'source query failed');
      return storeToolResult(db, ref, {
        type: 'source_query',
        status: outcome.ok ? 'ok' : 'error',
        content: outcome.ok ? outcome.text : toolResultText.sourceQueryFailed(outcome.message),
        durationMs,
      });
    },
  };
}
