import { ProtocolError, type Client } from '@modelcontextprotocol/client';
import type { Integration } from '../core/integration';
import type { EraProbeStore } from '../core/protocol-era';
import type { Logger } from '../platform/logger';
import { integrationFetch, type GuardedFetch, type NetworkPolicy } from '../platform/net/address-guard';
import { connectIntegration, type ElicitHandler, type SampleHandler, type ServerAsks } from './connect';
import type { OAuthFetchOptions } from './oauth-fetch';

/**
 * One connected client per integration per worker process, shared by activities and runs.
 * Spawning a stdio server (often through npx) costs seconds; a tool call should not.
 */
export interface McpPool {
  /** Runs fn with the integration's client, connecting (or reconnecting) first when needed. */
  withClient<T>(integration: Integration, fn: (client: Client) => Promise<T>): Promise<T>;
  /**
   * Runs fn on a connection no other call uses meanwhile, whose server's questions
   * (elicitation/create) and sampling requests go to `asks`: a server does not say which of its requests a question
   * belongs to, so only a connection with one call in flight can attribute it. Connections are
   * reused by later calls and closed when idle, like shared ones.
   */
  withCallClient<T>(integration: Integration, asks: ServerAsks, fn: (client: Client) => Promise<T>): Promise<T>;
  closeAll(): Promise<void>;
  /** ids of the integrations with a live connection, for tests and diagnostics */
  connectedIds(): string[];
  /** how this worker reaches an integration's HTTP server and its authorization server (the address rules) */
  fetchFor(integration: Integration): GuardedFetch;
}

export interface McpPoolOptions {
  logger: Logger;
  /** where the stdio servers' process groups are recorded (mcp-client/process-groups.ts; AppConfig.mcpGroupsDir) */
  groupsDir: string;
  /** a connection unused this long is closed, so idle servers do not hold memory and processes */
  idleMs?: number;
  connectTimeoutMs?: number;
  /** which addresses HTTP servers may be at (see platform/net/address-guard); by default, private ones only for integrations allowed them */
  network?: NetworkPolicy;
  /** where OAuth tokens are kept: the worker's database */
  oauth?: OAuthFetchOptions;
  /** where negotiated protocol eras are kept: the worker's database */
  eras?: EraProbeStore;
}

interface Entry {
  /** the config the connection was made with: a changed integration gets a new connection */
  updatedAt: string;
  connecting: Promise<Client>;
  client?: Client;
  inUse: number;
  lastUsed: number;
  dead: boolean;
  /** the call in flight on a per-call connection; questions without one are declined, sampling refused */
  asks?: ServerAsks;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export function createMcpPool(options: McpPoolOptions): McpPool {
  const { logger } = options;
  const { groupsDir } = options;
  const idleMs = options.idleMs ?? 5 * 60_000;
  const fetchFor = integrationFetch(options.network);
  const entries = new Map<string, Entry>();
  /** per-call connections of integrations with elicitation, by integration id */
  const callEntries = new Map<string, Entry[]>();
  let closing = false;

  const forget = (id: string, entry: Entry) => {
    if (entries.get(id) === entry) entries.delete(id);
    const list = callEntries.get(id);
    if (list?.includes(entry)) {
      const rest = list.filter((e) => e !== entry);
      if (rest.length > 0) callEntries.set(id, rest);
      else callEntries.delete(id);
    }
  };
  const allEntries = (): [string, Entry][] => [...entries, ...[...callEntries].flatMap(([id, list]) => list.map((e): [string, Entry] => [id, e]))];

  const closeEntry = async (id: string, entry: Entry) => {
    forget(id, entry);
    entry.dead = true;
    const client = entry.client ?? (await entry.connecting.catch(() => undefined));
    await client?.close().catch((err: Error) => logger.warn({ integrationId: id, err: err.message }, 'closing an MCP client failed'));
  };

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, entry] of allEntries()) {
      if (entry.inUse === 0 && now - entry.lastUsed >= idleMs) {
        logger.debug({ integrationId: id }, 'closing an idle MCP connection');
        void closeEntry(id, entry);
      }
    }
  }, Math.min(idleMs, 30_000));
  sweep.unref();

  const connect = (integration: Integration, perCall = false): Entry => {
    const entry: Entry = { updatedAt: integration.updatedAt, inUse: 0, lastUsed: Date.now(), dead: false, connecting: undefined! };
    const started = Date.now();
    const elicit: ElicitHandler | undefined = integration.elicitation
      ? (params, signal) => (entry.asks?.elicit ? entry.asks.elicit(params, signal) : Promise.resolve({ action: 'decline' }))
      : undefined;
    const sample: SampleHandler | undefined = integration.sampling !== 'never'
      ? (params, signal) => (entry.asks?.sample ? entry.asks.sample(params, signal) : Promise.reject(new ProtocolError(-1, 'No tool call of this connection is in flight')))
      : undefined;
    entry.connecting = connectIntegration(integration, {
      groupsDir, logger, timeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, fetch: fetchFor(integration), elicit, sample, oauth: options.oauth, eras: options.eras,
    }).then((client) => {
      entry.client = client;
      // A transport that closes or errors fatally (server crash, dropped stream) makes the next call reconnect.
      client.onclose = () => {
        entry.dead = true;
        forget(integration.id, entry);
      };
      logger.info({ integrationId: integration.id, durationMs: Date.now() - started }, 'MCP server connected');
      if (closing) void closeEntry(integration.id, entry);
      return client;
    }, (err: Error) => {
      entry.dead = true;
      forget(integration.id, entry);
      throw err;
    });
    // Waiters get the rejection; this handler only keeps an unobserved failure from crashing the process.
    entry.connecting.catch(() => undefined);
    if (perCall) callEntries.set(integration.id, [...(callEntries.get(integration.id) ?? []), entry]);
    else entries.set(integration.id, entry);
    return entry;
  };

  const use = async <T>(entry: Entry, fn: (client: Client) => Promise<T>): Promise<T> => {
    entry.inUse++;
    entry.lastUsed = Date.now();
    try {
      return await fn(await entry.connecting);
    } finally {
      entry.inUse--;
      entry.lastUsed = Date.now();
    }
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
      return use(entry, fn);
    },
    async withCallClient(integration, asks, fn) {
      if (closing) throw new Error('The MCP pool is shut down');
      for (const stale of (callEntries.get(integration.id) ?? []).filter((e) => e.inUse === 0 && (e.dead || e.updatedAt !== integration.updatedAt))) {
        void closeEntry(integration.id, stale);
      }
      const entry = (callEntries.get(integration.id) ?? []).find((e) => e.inUse === 0 && !e.dead && e.updatedAt === integration.updatedAt)
        ?? connect(integration, true);
      // Claimed before the first await, so that no other call takes it meanwhile.
      entry.inUse++;
      entry.asks = asks;
      try {
        return await use(entry, fn);
      } finally {
        entry.asks = undefined;
        entry.inUse--;
      }
    },
    async closeAll() {
      closing = true;
      clearInterval(sweep);
      await Promise.all(allEntries().map(([id, entry]) => closeEntry(id, entry)));
    },
    fetchFor,
    connectedIds() {
      return [...new Set(allEntries().filter(([, e]) => e.client && !e.dead).map(([id]) => id))];
    },
  };
}
