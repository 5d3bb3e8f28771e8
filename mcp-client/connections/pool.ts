import type { Client } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import type { EraProbeStore } from '../../core/protocol-era';
import type { Logger } from '../../platform/logger';
import { integrationFetch, type GuardedFetch, type NetworkPolicy } from '../../platform/net/address-guard';
import { connectIntegration, type ConnectOptions, type ServerAsks } from './connect';
import { PooledConnection } from './pooled-connection';
import type { OAuthFetchOptions } from '../oauth/oauth-fetch';

/**
 * One connected client per integration per worker process, shared by activities and runs.
 * Spawning a stdio server (often through npx) costs seconds; a tool call should not.
 */
export interface McpPool {
  /** Runs fn with the integration's client, connecting (or reconnecting) first when needed. */
  withClient<T>(integration: Integration, fn: (client: Client) => Promise<T>): Promise<T>;
  /**
   * Runs fn on a connection no other call uses meanwhile, whose server's questions
   * (elicitation/create) and sampling requests go to `asks`: a server does not say which of its
   * requests a question belongs to, so only a connection with one call in flight can attribute it.
   * Connections are reused by later calls and closed when idle, like shared ones.
   */
  withCallClient<T>(integration: Integration, asks: ServerAsks, fn: (client: Client) => Promise<T>): Promise<T>;
  closeAll(): Promise<void>;
  /** ids of the integrations with a live connection, for tests and diagnostics */
  connectedIds(): string[];
  /** the integration name of each live connection, one entry per connection (a metric's gauge reads it) */
  openConnections(): string[];
  /** how this worker reaches an integration's HTTP server and its authorization server (the address rules) */
  fetchFor(integration: Integration): GuardedFetch;
}

export interface McpPoolOptions {
  logger: Logger;
  /** where the stdio servers' process groups are recorded (mcp-client/transports/process-groups.ts; AppConfig.mcpGroupsDir) */
  groupsDir: string;
  /** a connection unused this long is closed, so idle servers do not hold memory and processes */
  idleMs?: number;
  connectTimeoutMs?: number;
  /**
   * which addresses HTTP servers may be at (see platform/net/address-guard); by default, private
   * ones only for integrations allowed them
   */
  network?: NetworkPolicy;
  /** where OAuth tokens are kept: the worker's database */
  oauth?: OAuthFetchOptions;
  /** where negotiated protocol eras are kept: the worker's database */
  eras?: EraProbeStore;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

export function createMcpPool(options: McpPoolOptions): McpPool {
  const pool = new ConnectionPool(options);
  // A plain object of the pool's operations, which its owner may wrap (worker/mcp-lifecycle.ts).
  return {
    withClient: (integration, fn) => pool.withClient(integration, fn),
    withCallClient: (integration, asks, fn) => pool.withCallClient(integration, asks, fn),
    closeAll: () => pool.closeAll(),
    connectedIds: () => pool.connectedIds(),
    openConnections: () => pool.openConnections(),
    fetchFor: pool.fetchFor,
  };
}

class ConnectionPool {
  readonly fetchFor: (integration: Integration) => GuardedFetch;
  private readonly logger: Logger;
  private readonly idleMs: number;
  private readonly shared = new Map<string, PooledConnection>();
  /** per-call connections of integrations with elicitation, by integration id */
  private readonly perCall = new Map<string, PooledConnection[]>();
  private readonly sweep: NodeJS.Timeout;
  private closing = false;

  constructor(private readonly options: McpPoolOptions) {
    this.logger = options.logger;
    this.idleMs = options.idleMs ?? 5 * 60_000;
    this.fetchFor = integrationFetch(options.network);
    this.sweep = setInterval(() => this.closeIdle(), Math.min(this.idleMs, 30_000));
    this.sweep.unref();
  }

  async withClient<T>(integration: Integration, fn: (client: Client) => Promise<T>): Promise<T> {
    if (this.closing) throw new Error('The MCP pool is shut down');
    let connection = this.shared.get(integration.id);
    if (connection && !connection.serves(integration)) {
      void this.close(integration.id, connection);
      connection = undefined;
    }
    connection ??= this.connect(integration, false);
    return connection.use(fn);
  }

  async withCallClient<T>(integration: Integration, asks: ServerAsks, fn: (client: Client) => Promise<T>): Promise<T> {
    if (this.closing) throw new Error('The MCP pool is shut down');
    const idle = (this.perCall.get(integration.id) ?? []).filter((c) => c.inUse === 0);
    for (const stale of idle.filter((c) => !c.serves(integration))) void this.close(integration.id, stale);
    const connection = idle.find((c) => c.serves(integration)) ?? this.connect(integration, true);
    return connection.useAlone(asks, fn);
  }

  async closeAll(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweep);
    await Promise.all(this.all().map(([id, connection]) => this.close(id, connection)));
  }

  connectedIds(): string[] {
    return [...new Set(this.all().filter(([, c]) => c.client && !c.dead).map(([id]) => id))];
  }

  openConnections(): string[] {
    return this.all().filter(([, c]) => c.client && !c.dead).map(([, c]) => c.integrationName);
  }

  private connect(integration: Integration, perCall: boolean): PooledConnection {
    const connection = new PooledConnection(integration.updatedAt, integration.name);
    const started = Date.now();
    connection.connecting = connectIntegration(integration, this.connectOptions(integration, connection)).then(
      (client) => this.connected(integration.id, connection, client, started),
      (err: Error) => {
        this.lost(integration.id, connection);
        throw err;
      },
    );
    // Waiters get the rejection; this handler only keeps an unobserved failure from crashing the process.
    connection.connecting.catch(() => undefined);
    if (perCall) this.perCall.set(integration.id, [...(this.perCall.get(integration.id) ?? []), connection]);
    else this.shared.set(integration.id, connection);
    return connection;
  }

  private connectOptions(integration: Integration, connection: PooledConnection): ConnectOptions {
    const { groupsDir, connectTimeoutMs, oauth, eras } = this.options;
    const timeoutMs = connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const fetch = this.fetchFor(integration);
    return { groupsDir, logger: this.logger, timeoutMs, fetch, ...connection.handlers(integration), oauth, eras };
  }

  private connected(id: string, connection: PooledConnection, client: Client, started: number): Client {
    connection.client = client;
    // A transport that closes or errors fatally (server crash, dropped stream) makes the next call reconnect.
    client.onclose = () => this.lost(id, connection);
    this.logger.info({ integrationId: id, durationMs: Date.now() - started }, 'MCP server connected');
    if (this.closing) void this.close(id, connection);
    return client;
  }

  private lost(id: string, connection: PooledConnection): void {
    connection.dead = true;
    this.forget(id, connection);
  }

  private async close(id: string, connection: PooledConnection): Promise<void> {
    this.forget(id, connection);
    connection.dead = true;
    const client = connection.client ?? (await connection.connecting.catch(() => undefined));
    await client?.close().catch((err: Error) => {
      this.logger.warn({ integrationId: id, err: err.message }, 'closing an MCP client failed');
    });
  }

  private closeIdle(): void {
    const now = Date.now();
    for (const [id, connection] of this.all()) {
      if (!connection.isIdle(now, this.idleMs)) continue;
      this.logger.debug({ integrationId: id }, 'closing an idle MCP connection');
      void this.close(id, connection);
    }
  }

  private forget(id: string, connection: PooledConnection): void {
    if (this.shared.get(id) === connection) this.shared.delete(id);
    const list = this.perCall.get(id);
    if (!list?.includes(connection)) return;
    const rest = list.filter((c) => c !== connection);
    if (rest.length > 0) this.perCall.set(id, rest);
    else this.perCall.delete(id);
  }

  private all(): [string, PooledConnection][] {
    const perCall = [...this.perCall].flatMap(([id, list]) => list.map((c): [string, PooledConnection] => [id, c]));
    return [...this.shared, ...perCall];
  }
}
