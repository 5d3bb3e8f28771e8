import { Client, SSEClientTransport, StreamableHTTPClientTransport, SdkHttpError } from '@modelcontextprotocol/client';
import type { Transport, ElicitRequest, ElicitResult } from '@modelcontextprotocol/client';
import type { Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import { guardedFetch, type GuardedFetch } from '../platform/net/address-guard';
import { boundedAnswers, type AnswerBounds } from './http-answers';
import { InFlightRequests } from './in-flight-requests';
import { messageTooLargeText, tooLargeAnswer, transportBound } from './message-bound';
import { authorizedFetch, type OAuthFetchOptions } from './oauth-fetch';
import { GroupStdioTransport } from './stdio-transport';

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
  /** where OAuth-protected servers' tokens are kept (the worker's database); without it, no server gets a token */
  oauth?: OAuthFetchOptions;
}

/** Answers a server's question (elicitation/create) asked during a request of this connection. */
export type ElicitHandler = (params: ElicitRequest['params'], signal: AbortSignal) => Promise<ElicitResult>;

export const defaultFetch = guardedFetch();

const CLIENT_INFO = { name: 'durable-agent-engine', version: '0.1.0' };

function newClient(elicit: ElicitHandler | undefined): Client {
  if (!elicit) return new Client(CLIENT_INFO, { capabilities: {} });
  const client = new Client(CLIENT_INFO, { capabilities: { elicitation: { form: {}, url: {} } } });
  client.setRequestHandler('elicitation/create', (request, ctx) => elicit(request.params, ctx.mcpReq.signal));
  return client;
}

async function connectOver(transport: Transport, timeoutMs: number, elicit?: ElicitHandler): Promise<Client> {
  const client = newClient(elicit);
  try {
    await client.connect(transport, { timeout: timeoutMs });
    return client;
  } catch (err) {
    // A failed handshake must not leave a server process or an open stream behind.
    await client.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
    throw err;
  }
}

function is4xx(err: unknown): boolean {
  return err instanceof SdkHttpError && err.status >= 400 && err.status < 500;
}

/** The bounds on an HTTP server's answers: a tool call's is the tighter of the two (see message-bound.ts). */
function answerBounds(integration: Integration): AnswerBounds {
  const message = transportBound(integration.maxResourceBytes);
  return { message, toolCall: Math.min(message, transportBound(integration.maxResultBytes)) };
}

/** A connected, initialised client for one integration. Secrets stay in this process. */
export async function connectIntegration(integration: Integration, options: ConnectOptions): Promise<Client> {
  const t = integration.transport;
  const logger = options.logger.child({ integrationId: integration.id });
  if (t.type === 'stdio') {
    return connectOver(new GroupStdioTransport({
      command: t.command, args: t.args, env: t.env, cwd: t.cwd, groupsDir: options.groupsDir, logger,
      maxMessageBytes: transportBound(integration.maxResourceBytes),
    }), options.timeoutMs, options.elicit);
  }
  const url = new URL(t.url);
  const requestInit: RequestInit = { headers: t.headers ?? {} };
  const base = options.fetch ?? defaultFetch;
  const authorized = options.oauth ? authorizedFetch(options.oauth, integration, base) : base;
  const bounds = answerBounds(integration);
  const streamCut = (bound: number) => logger.warn({ err: messageTooLargeText(bound) }, 'an MCP server\'s stream was cut at the transport bound');
  try {
    const fetch = boundedAnswers(authorized, bounds, streamCut);
    return await connectOver(new StreamableHTTPClientTransport(url, { requestInit, fetch }), options.timeoutMs, options.elicit);
  } catch (err) {
    // Servers of the older HTTP+SSE protocol answer the Streamable HTTP POST with a 4xx (SDK docs: backwards compatibility).
    if (!is4xx(err)) throw err;
    logger.info({ err: (err as Error).message }, 'Streamable HTTP refused; trying the older SSE transport');
    const fetch = boundedAnswers(authorized, bounds, (bound) => {
      streamCut(bound);
      void legacy.answerWaiting((id) => tooLargeAnswer(id, bound));
    });
    const legacy = new InFlightRequests(new SSEClientTransport(url, { requestInit, fetch }));
    return connectOver(legacy, options.timeoutMs, options.elicit);
  }
}
