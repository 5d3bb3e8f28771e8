import {
  Client, SSEClientTransport, StreamableHTTPClientTransport, SdkError, SdkErrorCode, SdkHttpError,
} from '@modelcontextprotocol/client';
import type { Transport, CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitResult } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import type { EraProbeStore } from '../../core/protocol-era';
import type { Logger } from '../../platform/logger';
import { guardedFetch, type GuardedFetch } from '../../platform/net/address-guard';
import { eraOutcome, eraPlan, LEGACY_PLAN, PROBE_TIMEOUT_MS, type EraPlan } from './era';
import { boundedAnswers, statusText, type AnswerBounds } from '../transports/http-answers';
import { InFlightRequests } from '../transports/in-flight-requests';
import { messageTooLargeText, tooLargeAnswer, transportBound } from '../transports/message-bound';
import { authorizedFetch, type OAuthFetchOptions } from '../oauth/oauth-fetch';
import { GroupStdioTransport } from '../transports/stdio-transport';

export interface ConnectOptions {
  groupsDir: string;
  logger: Logger;
  /** bound on spawning or reaching the server and the initialize handshake */
  timeoutMs: number;
  /** how HTTP servers are reached: a fetch that refuses metadata and link-local addresses (default) */
  fetch?: GuardedFetch;
  /**
   * For an integration with `elicitation`: the capability is declared (form and url modes) and
   * the server's elicitation/create requests go here. Without it, such requests are declined.
   */
  elicit?: ElicitHandler;
  /**
   * For an integration with `sampling` other than never: the capability is declared and a 2025-era
   * server's sampling/createMessage requests go here (a 2026-era server's arrive inside results).
   */
  sample?: SampleHandler;
  /** where OAuth-protected servers' tokens are kept (the worker's database); without it, no server gets a token */
  oauth?: OAuthFetchOptions;
  /** where negotiated protocol eras are kept (the worker's database); without it, `auto` probes on every connection */
  eras?: EraProbeStore;
}

/** Answers a server's question (elicitation/create) asked during a request of this connection. */
export type ElicitHandler = (params: ElicitRequest['params'], signal: AbortSignal) => Promise<ElicitResult>;
/** Answers a server's request to sample the client's model (sampling/createMessage) during a request of this connection. */
export type SampleHandler = (params: CreateMessageRequest['params'], signal: AbortSignal) => Promise<CreateMessageResult>;

/** What the server may ask of the client during a request; each declared as a capability only when given. */
export interface ServerAsks {
  elicit?: ElicitHandler;
  sample?: SampleHandler;
}

export const defaultFetch = guardedFetch();

const CLIENT_INFO = { name: 'durable-agent-engine', version: '0.1.0' };

/**
 * A failed era probe as the same failure of any request reads: a server error is its status, an
 * unusable reply its cause (whose text the SDK's probe message would quote: the server's bytes).
 */
function asRequestFailure(err: unknown): unknown {
  if (!(err instanceof SdkError) || err.code !== SdkErrorCode.EraNegotiationFailed) return err;
  if (err instanceof SdkHttpError && err.status >= 500) {
    const message = `Error POSTing to endpoint: ${statusText(err.status)}`;
    return new SdkHttpError(SdkErrorCode.EraNegotiationFailed, message, { status: err.status });
  }
  return err.cause ?? err;
}

/** A server paging forever must not stall discovery: past this many pages a list fails. */
const MAX_LIST_PAGES = 20;

/**
 * The one set of client options. Questions of a 2026-era server arrive inside results and are
 * answered by mcp-client/tool-calls/input-rounds.ts (manual mode), those of a 2025-era server as requests.
 */
function newClient({ elicit, sample }: ServerAsks, plan: EraPlan, timeoutMs: number): Client {
  const client = new Client(CLIENT_INFO, {
    capabilities: { ...(elicit ? { elicitation: { form: {}, url: {} } } : {}), ...(sample ? { sampling: {} } : {}) },
    versionNegotiation: { mode: plan.mode, probe: { timeoutMs: Math.min(PROBE_TIMEOUT_MS, timeoutMs) } },
    inputRequired: { autoFulfill: false },
    listMaxPages: MAX_LIST_PAGES,
  });
  if (elicit) client.setRequestHandler('elicitation/create', (request, ctx) => elicit(request.params, ctx.mcpReq.signal));
  if (sample) client.setRequestHandler('sampling/createMessage', (request, ctx) => sample(request.params, ctx.mcpReq.signal));
  return client;
}

async function connectOver(transport: Transport, timeoutMs: number, plan: EraPlan, asks: ServerAsks): Promise<Client> {
  const client = newClient(asks, plan, timeoutMs);
  try {
    await client.connect(transport, { timeout: timeoutMs, ...(plan.prior ? { prior: plan.prior } : {}) });
    return client;
  } catch (err) {
    // A failed handshake must not leave a server process or an open stream behind.
    await client.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
    throw asRequestFailure(err);
  }
}

/**
 * A 4xx that is not an MCP answer: a Streamable HTTP server answers in JSON-RPC (a 2026-only one
 * refuses `initialize` with -32022), a server of the older HTTP+SSE transport does not.
 */
function refusedByAnOlderServer(err: unknown): boolean {
  return err instanceof SdkHttpError && err.status >= 400 && err.status < 500 && !err.message.includes('"jsonrpc"');
}

/** The bounds on an HTTP server's answers: a tool call's is the tighter of the two (see mcp-client/transports/message-bound.ts). */
function answerBounds(integration: Integration): AnswerBounds {
  const message = transportBound(integration.maxResourceBytes);
  return { message, toolCall: Math.min(message, transportBound(integration.maxResultBytes)), content: integration.maxResourceBytes };
}

/** A connected, initialised client for one integration, on the era it is pinned to or negotiated. Secrets stay in this process. */
export async function connectIntegration(integration: Integration, options: ConnectOptions): Promise<Client> {
  const logger = options.logger.child({ integrationId: integration.id });
  const { eras } = options;
  const verdict = integration.protocol === 'auto' && eras
    ? await eras.read(integration).catch((err: Error) => logger.warn({ err: err.message }, 'could not read the kept protocol era'))
    : undefined;
  const plan = eraPlan(integration, verdict ?? undefined);
  try {
    const client = integration.transport.type === 'stdio'
      ? await connectStdio(integration, options, plan, logger)
      : await connectHttp(integration, options, plan, logger);
    if (eras && plan.probes) {
      const outcome = eraOutcome(client);
      logger.info({ era: outcome.era }, 'MCP protocol era negotiated');
      await eras.save(integration, outcome).catch((err: Error) => logger.warn({ err: err.message }, 'could not keep the protocol era'));
    }
    return client;
  } catch (err) {
    // A kept verdict may be why it failed (an upgraded or replaced server): the next connection probes.
    if (eras && integration.protocol === 'auto') await eras.clear(integration.id).catch(() => undefined);
    throw err;
  }
}

/**
 * Our stdio transport probes in place (the SDK spawns a probing sibling only for its own): a server
 * that exits on the probe, or never answers it, is a 2025 one, started again for `initialize`.
 */
async function connectStdio(integration: Integration, options: ConnectOptions, plan: EraPlan, logger: Logger): Promise<Client> {
  const t = integration.transport as Extract<Integration['transport'], { type: 'stdio' }>;
  const spawn = () => new GroupStdioTransport({
    command: t.command, args: t.args, env: t.env, cwd: t.cwd, groupsDir: options.groupsDir, logger,
    maxMessageBytes: transportBound(integration.maxResourceBytes), maxContentBytes: integration.maxResourceBytes,
  });
  try {
    return await connectOver(spawn(), options.timeoutMs, plan, options);
  } catch (err) {
    if (plan.prior || plan.mode !== 'auto') throw err;
    logger.info({ err: (err as Error).message }, 'the MCP server failed the protocol probe; starting it again as a 2025 server');
    return connectOver(spawn(), options.timeoutMs, LEGACY_PLAN, options);
  }
}

async function connectHttp(integration: Integration, options: ConnectOptions, plan: EraPlan, logger: Logger): Promise<Client> {
  const t = integration.transport as Extract<Integration['transport'], { type: 'http' }>;
  const url = new URL(t.url);
  const requestInit: RequestInit = { headers: t.headers ?? {} };
  const base = options.fetch ?? defaultFetch;
  const authorized = options.oauth ? authorizedFetch(options.oauth, integration, base) : base;
  const bounds = answerBounds(integration);
  const streamCut = (bound: number) => {
    logger.warn({ err: messageTooLargeText(bound) }, 'an MCP server\'s stream was cut at the transport bound');
  };
  try {
    const fetch = boundedAnswers(authorized, bounds, streamCut);
    return await connectOver(new StreamableHTTPClientTransport(url, { requestInit, fetch }), options.timeoutMs, plan, options);
  } catch (err) {
    // Servers of the older HTTP+SSE protocol (2025 era only) answer the Streamable HTTP POST with a
    // 4xx (SDK docs: backwards compatibility).
    if (!refusedByAnOlderServer(err) || (plan.mode !== 'auto' && plan.mode !== 'legacy')) throw err;
    logger.info({ err: (err as Error).message }, 'Streamable HTTP refused; trying the older SSE transport');
    const fetch = boundedAnswers(authorized, bounds, (bound) => {
      streamCut(bound);
      void legacy.answerWaiting((id) => tooLargeAnswer(id, bound));
    });
    const legacy = new InFlightRequests(new SSEClientTransport(url, { requestInit, fetch }));
    return connectOver(legacy, options.timeoutMs, LEGACY_PLAN, options);
  }
}
