import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { classifyAddress, type AddressClass } from './address-classes';

/**
 * Where the engine may open connections on behalf of integrations and agents (MCP HTTP servers,
 * LLM base URLs, later OAuth endpoints). Metadata and link-local addresses are always refused:
 * they hand out cloud credentials. Loopback and private networks are allowed unless blocked,
 * because local LLM and MCP servers are a real use.
 */
export interface NetworkPolicy {
  blockPrivateNetworks: boolean;
}

export const DEFAULT_NETWORK_POLICY: NetworkPolicy = { blockPrivateNetworks: false };

const WHY: Record<AddressClass, string> = {
  metadata: 'cloud metadata addresses are never a target of the engine',
  'link-local': 'link-local addresses (where cloud metadata endpoints live) are never a target of the engine',
  loopback: 'loopback addresses are refused because BLOCK_PRIVATE_NETWORKS is on',
  private: 'private network addresses are refused because BLOCK_PRIVATE_NETWORKS is on',
  unspecified: 'unspecified addresses (they reach this host) are refused because BLOCK_PRIVATE_NETWORKS is on',
  public: 'public addresses are allowed',
};

/** A connection the policy refused; thrown before any packet is sent to the address. */
export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError';
  readonly code = 'EADDRREFUSED_BY_POLICY';
  constructor(readonly host: string, readonly address: string, readonly addressClass: AddressClass) {
    const target = host === address ? address : `${host} (${address})`;
    super(`connection to ${target} refused: ${WHY[addressClass]}`);
  }
}

/** The class that makes an address refused under the policy, or undefined when it may be reached. */
export function refusedClass(address: string, policy: NetworkPolicy): AddressClass | undefined {
  const kind = classifyAddress(address);
  if (kind === undefined) return undefined;
  if (kind === 'metadata' || kind === 'link-local') return kind;
  if (policy.blockPrivateNetworks && (kind === 'loopback' || kind === 'private' || kind === 'unspecified')) return kind;
  return undefined;
}

/** dns.lookup, then a refusal when any of the name's addresses is refused (a name with several must not pick a bad one). */
function guardedLookup(policy: NetworkPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      for (const { address } of addresses) {
        const kind = refusedClass(address, policy);
        if (kind) return callback(new AddressRefusedError(hostname, address, kind) as NodeJS.ErrnoException, '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/**
 * An undici dispatcher whose every new connection (first request, redirects, reconnects) is checked:
 * names after DNS resolution, IP literals before connecting (net.connect skips the lookup for them).
 */
export function guardedAgent(policy: NetworkPolicy = DEFAULT_NETWORK_POLICY): Agent {
  const connect = buildConnector({ lookup: guardedLookup(policy) });
  return new Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[(.*)\]$/, '$1');
      const kind = isIP(host.split('%')[0]) ? refusedClass(host, policy) : undefined;
      if (kind) return callback(new AddressRefusedError(host, host, kind), null);
      return connect(options, callback);
    },
  });
}

export type GuardedFetch = typeof globalThis.fetch;

/**
 * fetch over a guarded dispatcher, for the MCP SDK's HTTP transports and the AI SDK providers.
 * A refusal surfaces as the AddressRefusedError itself, not undici's generic "fetch failed",
 * so that the LLM, the API caller and the logs read why.
 */
export function guardedFetch(policy: NetworkPolicy = DEFAULT_NETWORK_POLICY): GuardedFetch {
  const dispatcher = guardedAgent(policy);
  const fetchFn = async (input: Parameters<GuardedFetch>[0], init?: RequestInit): Promise<Response> => {
    try {
      const response = await undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as object), dispatcher });
      // undici's own Response is not the global one, and `instanceof Response` decides how the MCP
      // SDK reads an OAuth error body: hand on the global kind, with the same status, headers and stream.
      const nullBody = response.status === 204 || response.status === 205 || response.status === 304;
      const global = new Response(nullBody ? null : response.body as ReadableStream<Uint8Array> | null, {
        status: response.status, statusText: response.statusText, headers: response.headers as unknown as Headers,
      });
      return Object.defineProperty(global, 'url', { value: response.url });
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      if (cause instanceof AddressRefusedError) throw cause;
      throw err;
    }
  };
  return fetchFn as GuardedFetch;
}
