import type { Db } from '../core/db/pool';
import type { RunChangeFeed } from '../core/db/run-changes';
import type { LlmProviders } from '../core/llm/types';
import type { Logger } from '../core/logger';
import type { McpPool } from '../core/mcp/pool';
import type { SourceQueryOptions } from '../core/sql/source-query';

/** What activities receive from the worker's composition root. */
export interface ActivityDeps {
  db: Db;
  logger: Logger;
  providers: LlmProviders;
  /** the worker's MCP connections; only activities talk to MCP servers */
  mcpPool: McpPool;
  /** source_query bounds (timeout, rows, bytes); defaults in core/sql/source-query.ts */
  sourceQuery?: SourceQueryOptions;
  /**
   * the process's LISTEN connection: a tool call waiting for an answer to an MCP server's question
   * wakes when the API records it. Without one, the wait polls the database.
   */
  runChanges?: RunChangeFeed;
}
