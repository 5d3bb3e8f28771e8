import { ProtocolError, type Client } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import type { ServerAsks } from './connect';

/** One connection of the pool (pool.ts): its client once connected, and the calls using it. */
export class PooledConnection {
  client?: Client;
  /** set by the pool as soon as the connection is made */
  connecting!: Promise<Client>;
  inUse = 0;
  lastUsed = Date.now();
  dead = false;
  /** the call in flight on a per-call connection; questions without one are declined, sampling refused */
  private asks?: ServerAsks;

  /**
   * `updatedAt`: the config the connection was made with; a changed integration gets a new connection.
   * `integrationName`: the integration's name then, which metrics count connections by (never its id).
   */
  constructor(private readonly updatedAt: string, readonly integrationName: string) {}

  /** Whether it still serves the integration as it is now: not dead, and made with its current config. */
  serves(integration: Integration): boolean {
    return !this.dead && this.updatedAt === integration.updatedAt;
  }

  isIdle(now: number, idleMs: number): boolean {
    return this.inUse === 0 && now - this.lastUsed >= idleMs;
  }

  /**
   * What the connection declares the server may ask: for an integration with elicitation (or
   * sampling), handlers that pass each question to the call in flight, if any.
   */
  handlers(integration: Integration): ServerAsks {
    return {
      elicit: integration.elicitation
        ? (params, signal) => (this.asks?.elicit ? this.asks.elicit(params, signal) : Promise.resolve({ action: 'decline' }))
        : undefined,
      sample: integration.sampling !== 'never'
        ? (params, signal) => (this.asks?.sample
          ? this.asks.sample(params, signal)
          : Promise.reject(new ProtocolError(-1, 'No tool call of this connection is in flight')))
        : undefined,
    };
  }

  async use<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    this.inUse++;
    this.lastUsed = Date.now();
    try {
      return await fn(await this.connecting);
    } finally {
      this.inUse--;
      this.lastUsed = Date.now();
    }
  }

  /** Runs fn as the one call of the connection, its server's questions going to `asks`. */
  async useAlone<T>(asks: ServerAsks, fn: (client: Client) => Promise<T>): Promise<T> {
    // Claimed before the first await, so that no other call takes it meanwhile.
    this.inUse++;
    this.asks = asks;
    try {
      return await this.use(fn);
    } finally {
      this.asks = undefined;
      this.inUse--;
    }
  }
}
