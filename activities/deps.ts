import type { WorkerVersion } from '../core/worker-version';
import type { Db } from '../store/pool';
import type { RunChangeFeed } from '../store/runs/change-feed';
import type { LlmProviders } from '../llm/types';
import type { Logger } from '../platform/logger';
import type { McpPool } from '../mcp-client/connections/pool';
import type { SourceQueryOptions } from '../sources/query/source-query';
import type { ToolSlots } from './tool-slots';
import type { PriceTable } from '../core/pricing';
import type { RunEndMetrics } from '../platform/metrics/worker-metrics';

/** What activities receive from the worker's composition root. */
export interface ActivityDeps {
  db: Db;
  logger: Logger;
  providers: LlmProviders;
  /** the worker's MCP connections; only activities talk to MCP servers */
  mcpPool: McpPool;
  /** source_query bounds (timeout, rows, bytes); defaults in sources/query/source-query.ts */
  sourceQuery?: SourceQueryOptions;
  /**
   * the process's LISTEN connection: a tool call waiting for an answer to an MCP server's question
   * wakes when the API records it. Without one, the wait polls the database.
   */
  runChanges?: RunChangeFeed;
  /** the worker's Worker Deployment Version, when versioned: each turn records it on its run */
  version?: WorkerVersion;
  /** how many calls of each integration the process runs at once; shared by every Worker of the process (one is made when absent) */
  toolSlots?: ToolSlots;
  /** the operator's price table (PRICES_FILE): each turn's cost is computed from it at the turn's end */
  prices?: PriceTable;
  /** the process's Prometheus metrics: runs ended and tool calls, counted once per recorded end */
  metrics?: RunEndMetrics;
}
