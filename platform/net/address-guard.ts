import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, request as undiciRequest, fetch as undiciFetch, type Dispatcher } from 'undici';
import { classifyAddress, type AddressClass } from './address-classes';

/**
 * Where the engine may open connections on behalf of integrations and agents (MCP HTTP servers,
 * their OAuth endpoints, LLM base URLs). Metadata and link-local addresses are always refused:
 * they hand out cloud credentials. Loopback and private networks are allowed for LLM base URLs
 * (an operator's setting) unless blocked; an integration reaches them only with its
 * allowPrivateNetwork, which only the operator sets, or where every API caller is the operator.
 */
export interface NetworkPolicy {
  blockPrivateNetworks: boolean;
  /**
   * Every integration may reach loopback and private networks, flag or not: for a worker serving
   * an API where every caller is the operator (`npm start` on loopback without ADMIN_API_KEY).
   */
  privateNetworksForAll?: boolean;
}

export const DEFAULT_NETWORK_POLICY: NetworkPolicy = { blockPrivateNetworks: false };

const BLOCKED = 'BLOCK_PRIVATE_NETWORKS is on';

const ALWAYS: Partial<Record<AddressClass, string>> = {
  metadata: 'cloud metadata addresses are never a target of the engine',
  'link-local': 'link-local addresses (where cloud metadata endpoints live) are never a target of the engine',
};
const PRIVATE: Partial<Record<AddressClass, string>> = {
  loopback: 'loopback addresses',
  private: 'private network addresses',
  unspecified: 'unspecified addresses (they reach this host)',
};

/** A connection the policy refused; thrown before any packet is sent to the address. */
export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError';
  readonly code = 'EADDRREFUSED_BY_POLICY';
  /** `privateRefusal`: why loopback and private addresses are refused on this connection */
  constructor(readonly host: string, readonly address: string, readonly addressClass: AddressClass, privateRefusal = BLOCKED) {
    const target = host === address ? address : `${host} (${address})`;
    super(`connection to ${target} refused: ${ALWAYS[addressClass] ?? `${PRIVATE[addressClass]} are refused because ${privateRefusal}`}`);
  }
}

/** The class that makes an address refused under the policy, or undefined when it may be reached. */
export function refusedClass(address: string, policy: NetworkPolicy): AddressClass | undefined {
  return refusedUnder(address, policy.blockPrivateNetworks ? BLOCKED : undefined);
}

/** `privateRefusal`: why loopback and private addresses are refused, or undefined when they may be reached. */
function refusedUnder(address: string, privateRefusal: string | undefined): AddressClass | undefined {
  const kind = classifyAddress(address);
  if (kind === undefined) return undefined;
  if (ALWAYS[kind]) return kind;
  if (privateRefusal !== undefined && PRIVATE[kind]) return kind;
  return undefined;
}

/** dns.lookup, then a refusal when any of the name's addresses is refused (a name with several must not pick a bad one). */
function guardedLookup(privateRefusal: string | undefined): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      for (const { address } of addresses) {
        const kind = refusedUnder(address, privateRefusal);
        if (kind) return callback(new AddressRefusedError(hostname, address, kind, privateRefusal) as NodeJS.ErrnoException, '', 0);
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
function guardedAgent(privateRefusal: string | undefined): Agent {
  const connect = buildConnector({ lookup: guardedLookup(privateRefusal) });
  return new Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[(.*)\]$/, '$1');
      const kind = isIP(host.split('%')[0]) ? refusedUnder(host, privateRefusal) : undefined;
      if (kind) return callback(new AddressRefusedError(host, host, kind, privateRefusal), null);
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
  return guardedHttp(policy).fetch;
}

/**
 * A plain request over the same guard (undici's `request`): its body is a Node stream, which costs
 * far less per chunk than fetch's web stream, for bodies read as they come (a model's event
 * stream). It follows no redirect: a redirect's answer is the answer.
 */
export type GuardedRequest = (
  url: string, options: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<Dispatcher.ResponseData>;

/** fetch and request over one guarded dispatcher (one pool of connections). */
export function guardedHttp(policy: NetworkPolicy = DEFAULT_NETWORK_POLICY): { fetch: GuardedFetch; request: GuardedRequest } {
  const dispatcher = guardedAgent(policy.blockPrivateNetworks ? BLOCKED : undefined);
  return {
    fetch: fetchOver(dispatcher),
    request: (url, { method, headers, body, signal }) => undiciRequest(url, {
      method: method as Dispatcher.HttpMethod, headers, body, signal, dispatcher,
    }),
  };
}

/** The fetch of one integration's connections (its MCP server and its OAuth endpoints), by the policy and its allowPrivateNetwork. */
export type IntegrationFetch = (integration: { allowPrivateNetwork: boolean }) => GuardedFetch;

export function integrationFetch(policy: NetworkPolicy = DEFAULT_NETWORK_POLICY): IntegrationFetch {
  const open = guardedFetch(policy);
  if (policy.blockPrivateNetworks || policy.privateNetworksForAll) return () => open;
  const closed = fetchOver(guardedAgent("the integration does not have allowPrivateNetwork (an operator's setting)"));
  return (integration) => (integration.allowPrivateNetwork ? open : closed);
}

function fetchOver(dispatcher: Agent): GuardedFetch {
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
