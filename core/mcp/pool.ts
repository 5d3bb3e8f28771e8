import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Integration } from '../db/integrations';
import type { Logger } from '../logger';
import type { GuardedFetch } from '../net/address-guard';
import { connectIntegration } from './connect';
import { DEFAULT_GROUPS_DIR } from './process-groups';

/**
 * One connected client per integration per worker process, shared by activities and runs.
 * Spawning a stdio server (often through npx) costs seconds; a tool call should not.
 */
export interface McpPool {
  /** Runs fn with the integration's client, connecting (or reconnecting) first when needed. */
  withClient<T>(integration: Integration, fn: (client: Client) => Promise<T>): Promise<T>;
  closeAll(): Promise<void>;
  /** ids of the integrations with a live connection, for tests and diagnostics */
  connectedIds(): string[];
}

export interface McpPoolOptions {
  logger: Logger;
  groupsDir?: string;
  /** a connection unused this long is closed, so idle servers do not hold memory and processes */
  idleMs?: number;
  connectTimeoutMs?: number;
  /** how HTTP servers are reached (see core/net/address-guard); the default refuses metadata addresses */
  fetch?: GuardedFetch;
}

interface Entry {
  /** the config the connection was made with: a changed integration gets a new connection */
  updatedAt: string;
  connecting: Promise<Client>;
  client?: Client;
  inUse: number;
  lastUsed: number;
  dead: boolean;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export function createMcpPool(options: McpPoolOptions): McpPool {
  const { logger } = options;
  const groupsDir = options.groupsDir ?? DEFAULT_GROUPS_DIR;
  const idleMs = options.idleMs ?? 5 * 60_000;
  const entries = new Map<string, Entry>();
  let closing = false;

  const closeEntry = async (id: string, entry: Entry) => {
    if (entries.get(id) === entry) entries.delete(id);
    entry.dead = true;
    const client = entry.client ?? (await entry.connecting.catch(() => undefined));
    await client?.close().catch((err: Error) => logger.warn({ integrationId: id, err: err.message }, 'closing an MCP client failed'));
  };

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, entry] of entries) {
      if (entry.inUse === 0 && now - entry.lastUsed >= idleMs) {
        logger.debug({ integrationId: id }, 'closing an idle MCP connection');
        void closeEntry(id, entry);
      }
    }
  }, Math.min(idleMs, 30_000));
  sweep.unref();

  const connect = (integration: Integration): Entry => {
    const entry: Entry = { updatedAt: integration.updatedAt, inUse: 0, lastUsed: Date.now(), dead: false, connecting: undefined! };
    const started = Date.now();
    entry.connecting = connectIntegration(integration, {
      groupsDir, logger, timeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, fetch: options.fetch,
    }).then((client) => {
      entry.client = client;
      // A transport that closes or errors fatally (server crash, dropped stream) makes the next call reconnect.
      client.onclose = () => {
        entry.dead = true;
        if (entries.get(integration.id) === entry) entries.delete(integration.id);
      };
      logger.info({ integrationId: integration.id, durationMs: Date.now() - started }, 'MCP server connected');
      if (closing) void closeEntry(integration.id, entry);
      return client;
    }, (err: Error) => {
      entry.dead = true;
      if (entries.get(integration.id) === entry) entries.delete(integration.id);
      throw err;
    });
    // Waiters get the rejection; this handler only keeps an unobserved failure from crashing the process.
    entry.connecting.catch(() => undefined);
    entries.set(integration.id, entry);
    return entry;
  };

  return {
    async withClient(integration, fn) {
      if (closing) throw new Error('The MCP pool is shut down');
      let entry = entries.get(integration.id);
      if (entry && (entry.dead || entry.updatedAt !== integration.updatedAt)) {
        void closeEntry(integration.id, entry);
        entry = undefined;
      }
      entry ??= connect(integration);
      entry.inUse++;
      entry.lastUsed = Date.now();
      try {
        return await fn(await entry.connecting);
      } finally {
        entry.inUse--;
        entry.lastUsed = Date.now();
      }
    },
    async closeAll() {
      closing = true;
      clearInterval(sweep);
      await Promise.all([...entries].map(([id, entry]) => closeEntry(id, entry)));
    },
    connectedIds() {
      return [...entries].filter(([, e]) => e.client && !e.dead).map(([id]) => id);
    },
  };
}
