import { ConfigError } from '../platform/config';
import type { Logger } from '../platform/logger';
import { createMcpPool, type McpPool, type McpPoolOptions } from '../mcp-client/connections/pool';
import { killLeftoverServerGroups } from '../mcp-client/transports/process-groups';
import { cleanSpoolLeftovers, removeSpoolDirectory } from '../mcp-client/large-content/spool-files';
import { PrivateDirError } from '../platform/private-files';

/** How often a live worker looks for servers left by a sibling worker that died on this machine. */
const SWEEP_EVERY_MS = 15_000;

/**
 * The worker's MCP pool. A predecessor killed with SIGKILL could not stop its stdio servers,
 * so their process groups are killed first, and again periodically: with several workers on
 * one machine, the one that died may have no successor. Whoever starts the pool calls
 * closeAll() after the worker has stopped (in-flight activities still use it until then).
 */
export async function startMcpPool(logger: Logger, options: Omit<McpPoolOptions, 'logger'>): Promise<McpPool> {
  const { groupsDir } = options;
  const sweep = async () => {
    const killed = await killLeftoverServerGroups(groupsDir, logger);
    if (killed > 0) logger.warn({ killed }, 'killed MCP servers left by a crashed worker');
  };
  await sweep().catch((err: unknown) => {
    if (!(err instanceof PrivateDirError)) throw err;
    throw new ConfigError(`Refusing the directory of MCP server process groups (${groupsDir}): ${err.message}. Workers kill the process `
      + 'groups recorded there, so it must be this user\'s alone: remove it, or set XDG_RUNTIME_DIR to a private directory.');
  });
  // Resource contents spooled by a worker that died mid-call (mcp-client/large-content/spool-files.ts).
  await cleanSpoolLeftovers().catch((err: unknown) => logger.warn({ err }, 'could not remove the spool files of a crashed worker'));
  const timer = setInterval(() => void sweep().catch((err: unknown) => logger.warn({ err }, 'MCP leftover sweep failed')), SWEEP_EVERY_MS);
  timer.unref();
  const pool = createMcpPool({ ...options, logger });
  return {
    ...pool,
    async closeAll() {
      clearInterval(timer);
      await pool.closeAll();
      await removeSpoolDirectory();
    },
  };
}
