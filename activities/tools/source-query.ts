import { z } from 'zod';
import { sourceQueryKind } from '../../core/native-tool-kinds';
import { toolResultText } from '../../core/tool-texts';
import { listDataSources } from '../../store/data-sources';
import { sourceCatalogue } from '../../sources/query/source-catalogue';
import { runSourceQuery, SOURCE_QUERY_DEFAULTS } from '../../sources/query/source-query';
import { sourceQuerySupport } from '../../sources/query/thread-role';
import type { ToolHandler } from '../tool-handler';
import { shortened } from '../../core/truncated-text';
import { requiredString, type NativeTool, type ToolArgs } from './native-tool';

/** The tracing span of a query; logs carry the name too. */
export const SOURCE_QUERY_SPAN = 'source_query';

const positiveInteger = 'limit must be a positive integer';

/** source_query {sql, limit?}: the contract schema (docs/tools.md). */
export const sourceQueryTool: NativeTool<{ sql: string; limit?: number }> = {
  ...sourceQueryKind,
  input: z.object({
    sql: requiredString('sql').describe('One SELECT, VALUES, TABLE or WITH statement.'),
    limit: z.number({ error: positiveInteger }).int(positiveInteger).positive(positiveInteger)
      .optional().describe('The maximum number of rows to return.'),
  }),
};

/**
 * source_query: one read-only statement over the thread's imported tables, as the thread's own
 * role. Refusals and SQL errors are results for the LLM; a lost database connection is thrown, and
 * the activity is retried.
 */
export const sourceQueryExecution: ToolHandler<ToolArgs<typeof sourceQueryTool>, ToolArgs<typeof sourceQueryTool>> = {
  native: {
    tool: sourceQueryTool,
    /** The thread's tables, or why the tool is off: one cheap query a turn, none while the thread has no tables. */
    describe: async ({ deps, threadId, hasDataSources }) => {
      const support = await sourceQuerySupport(deps.db);
      const sources = support.enabled && hasDataSources ? await listDataSources(deps.db, threadId) : [];
      return "Run one read-only SQL query over this thread's data sources."
        + sourceCatalogue(sources, support, { ...SOURCE_QUERY_DEFAULTS, ...deps.sourceQuery });
    },
  },
  span: () => SOURCE_QUERY_SPAN,
  check: async (args, input) => ({ request: args, logFields: { threadId: input.threadId, operationType: 'source_query' } }),
  execute: async (args, { input, deps, log }) => {
    const outcome = await runSourceQuery(deps.db, input.threadId, args, deps.sourceQuery);
    if (outcome.ok) return { status: 'ok', content: outcome.text };
    // The SQL is logged on refusal: an operator wants to see what an injected prompt tried.
    log.warn({ error: outcome.message, sql: shortened(args.sql, 2000) }, 'source query refused or failed');
    return { status: 'error', content: toolResultText.sourceQueryFailed(outcome.message) };
  },
};
