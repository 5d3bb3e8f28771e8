import type { Logger } from '../core/logger';
import { createMcpPool, type McpPool, type McpPoolOptions } from '../core/mcp/pool';
import { DEFAULT_GROUPS_DIR, killLeftoverServerGroups } from '../core/mcp/process-groups';

/**
 * The worker's MCP pool. A predecessor killed with SIGKILL could not stop its stdio servers,
 * so their process groups are killed first. Whoever starts the pool calls closeAll() after the
 * worker has stopped (in-flight activities still use it until then).
 */
export async function startMcpPool(logger: Logger, options: Omit<McpPoolOptions, 'logger'> = {}): Promise<McpPool> {
  const groupsDir = options.groupsDir ?? DEFAULT_GROUPS_DIR;
  const killed = await killLeftoverServerGroups(groupsDir, logger);
  if (killed > 0) logger.warn({ killed }, 'killed MCP servers left by a crashed worker');
  return createMcpPool({ ...options, logger, groupsDir });
}
