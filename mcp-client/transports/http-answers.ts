import { STATUS_CODES } from 'node:http';
import type { FetchLike } from '@modelcontextprotocol/client';
import { OAuthErrorCode } from '@modelcontextprotocol/client';
import { mcpErrorText } from '../../core/mcp-error-text';
import { eventStream } from '../large-content/event-stream-answers';
import { messageTooLargeText, notKeptAnswer, tooLargeAnswer } from './message-bound';
import { MessageBytes } from '../large-content/message-bytes';
import { SpoolingMessage } from '../large-content/spooling-message';

/**
 * What the engine reads of the HTTP answers of an MCP server (Streamable HTTP and the older
 * HTTP+SSE) and of its authorization server, between the SDK and the network.
 *
 * - An error answer's body and reason phrase are the server's to choose, and whatever its network
 *   reaches: they become the status (`HTTP 502 Bad Gateway`), which is all any error text shows.
 *   One exception: a 4xx whose body is a JSON-RPC error is the MCP server's own answer (on the
 *   2026 era a request's errors come so, and the era probe reads -32022 there); it is made again
 *   from its code, its message (shortened) and small data, as an answer of 200 would carry them.
 * - A JSON body, and each event of an event stream, is read up to a bound. Past it the connection
 *   is cut, and the requests the POST carried are answered with the bound's error, as a stdio
 *   server's over-long line is; a GET stream past it ends with that error, and onStreamCut is told
 *   (the older transport's answers all come on that stream).
 */

export interface AnswerBounds {
  /** the largest answer to tools/call */
  toolCall: number;
  /** the largest of any other message, as held in memory (a resource arrives in one) */
  message: number;
  /** the largest decoded contents of a resources/read result, which go to spool files as they arrive */
  content: number;
}

const NULL_BODY = new Set([204, 205, 304]);

/** `HTTP 502 Bad Gateway`: an answer's status, the only part of an error answer that texts show. */
export function statusText(status: number): string {
  return STATUS_CODES[status] ? `HTTP ${status} ${STATUS_CODES[status]}` : `HTTP ${status}`;
}

/** The answer with another body (read by the SDK as it reads the network's) and the standard reason phrase. */
function rebuilt(res: Response, body: ReadableStream<Uint8Array> | string | null, headers = new Headers(res.headers)): Response {
  headers.delete('content-length');
  const init = { status: res.status, statusText: STATUS_CODES[res.status] ?? '', headers };
  const answer = new Response(NULL_BODY.has(res.status) ? null : body, init);
  return Object.defineProperty(answer, 'url', { value: res.url });
}

function statusOnly(res: Response, body = statusText(res.status), contentType = 'text/plain'): Response {
  res.body?.cancel().catch(() => undefined);
  const headers = new Headers(res.headers);
  headers.set('content-type', contentType);
  return rebuilt(res, body, headers);
}

interface Sent {
  /** ids of the requests the POST carried: they are answered when their answer is cut */
  ids: (string | number)[];
  batch: boolean;
  bound: number;
  content: number;
}

function sentRequests(init: RequestInit | undefined, bounds: AnswerBounds): Sent {
  const none = { ids: [], batch: false, bound: bounds.message, content: bounds.content };
  if (init?.method !== 'POST' || typeof init.body !== 'string') return none;
  let parsed: unknown;
  try {
    parsed = JSON.parse(init.body);
  } catch {
    return none;
  }
  const messages = (Array.isArray(parsed) ? parsed : [parsed]) as { id?: unknown; method?: unknown }[];
  const requests = messages.filter((m) => typeof m?.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number'));
  const toolCalls = requests.length > 0 && requests.every((m) => m.method === 'tools/call');
  return {
    ids: requests.map((m) => m.id as string | number),
    batch: Array.isArray(parsed),
    bound: toolCalls ? bounds.toolCall : bounds.message,
    content: bounds.content,
  };
}

const encoder = new TextEncoder();

/**
 * Ends `controller`'s stream in place of an answer past the bound: the POST's requests answered
 * with the bound's error, or the error itself.
 */
async function refuse(controller: ReadableStreamDefaultController<Uint8Array>, reader: ReadableStreamDefaultReader<Uint8Array>,
  sent: Sent, frame: (answer: string) => string, size?: number, onStreamCut?: (bound: number) => void, failure?: string): Promise<void> {
  await reader.cancel().catch(() => undefined);
  const text = failure ?? messageTooLargeText(sent.bound, size);
  if (sent.ids.length === 0) {
    onStreamCut?.(sent.bound);
    controller.error(new Error(text));
    return;
  }
  const answers = sent.ids.map((id) => (failure ? notKeptAnswer(id, failure) : tooLargeAnswer(id, sent.bound, size)));
  controller.enqueue(encoder.encode(frame(JSON.stringify(sent.batch ? answers : answers[0]))));
  controller.close();
}

/**
 * A body read whole, up to the bound (a JSON answer; a length it declares past the bound is not read
 * at all), a resource's large contents taken out to spool files as they arrive (mcp-client/large-content/spooling-message.ts).
 */
function wholeBody(res: Response, body: ReadableStream<Uint8Array>, sent: Sent): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const declared = Number(res.headers.get('content-length') ?? NaN);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (declared > sent.bound) return refuse(controller, reader, sent, (json) => json, declared);
      const bytes = new SpoolingMessage(sent.content);
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        bytes.push(read.value);
        if (bytes.size > sent.bound || bytes.overBound || bytes.failure) {
          const { failure } = bytes;
          bytes.clear();
          return refuse(controller, reader, sent, (json) => json, undefined, undefined, failure);
        }
      }
      const body = bytes.take();
      if (body.length > 0) controller.enqueue(body);
      controller.close();
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

const RPC_ERROR_READ_BYTES = 16 * 1024;
const RPC_MESSAGE_CHARS = 1024;
const RPC_DATA_BYTES = 4 * 1024;

/** A 4xx's JSON-RPC error, made again from its parts; undefined for anything else. */
async function jsonRpcError(res: Response): Promise<string | undefined> {
  if (res.status < 400 || res.status >= 500 || !res.headers.get('content-type')?.toLowerCase().includes('json')) return undefined;
  try {
    const answer = JSON.parse(await readHead(res, RPC_ERROR_READ_BYTES)) as {
      jsonrpc?: unknown; id?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown };
    };
    const { error } = answer;
    if (answer.jsonrpc !== '2.0' || !Number.isInteger(error?.code)) return undefined;
    const id = typeof answer.id === 'string' || typeof answer.id === 'number' ? answer.id : null;
    const data = error!.data === undefined ? undefined : JSON.stringify(error!.data);
    return JSON.stringify({ jsonrpc: '2.0', id, error: {
      code: error!.code, message: String(error!.message ?? '').slice(0, RPC_MESSAGE_CHARS),
      ...(data !== undefined && data.length <= RPC_DATA_BYTES ? { data: error!.data } : {}),
    } });
  } catch {
    return undefined;
  }
}

/** The fetch an MCP server's transport uses: answers bounded and error bodies replaced (see above). */
export function boundedAnswers(fetch: FetchLike, bounds: AnswerBounds, onStreamCut?: (bound: number) => void): FetchLike {
  return async (url, init) => {
    const res = await fetch(url, init);
    if (!res.ok) {
      const rpc = await jsonRpcError(res);
      return rpc ? statusOnly(res, rpc, 'application/json') : statusOnly(res);
    }
    if (!res.body) return res;
    const sent = sentRequests(init, bounds);
    const eventStreamAnswer = res.headers.get('content-type')?.toLowerCase().startsWith('text/event-stream');
    const sse = (json: string) => `event: message\ndata: ${json}\n\n`;
    const events = () => eventStream(res.body!, { bound: sent.bound, maxContentBytes: sent.content },
      (controller, reader, failure) => refuse(controller, reader, sent, sse, undefined, onStreamCut, failure));
    return rebuilt(res, eventStreamAnswer ? events() : wholeBody(res, res.body, sent));
  };
}

/** Enough of an authorization server's error answer to find its OAuth error code. */
const OAUTH_ERROR_READ_BYTES = 16 * 1024;

/** About the first `max` bytes of a body, as text; the rest is not read. */
async function readHead(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const bytes = new MessageBytes();
  for (let read = await reader.read(); !read.done && bytes.size < max; read = await reader.read()) bytes.push(read.value);
  await reader.cancel().catch(() => undefined);
  return bytes.join().toString('utf8');
}

async function oauthErrorCode(res: Response): Promise<string | undefined> {
  if (!res.body) return undefined;
  const text = await readHead(res, OAUTH_ERROR_READ_BYTES);
  try {
    const code = (JSON.parse(text) as { error?: unknown }).error;
    return typeof code === 'string' && OAUTH_ERROR_CODES.has(code) ? code : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The fetch of an integration's OAuth requests (discovery, registration, tokens, revocation): an
 * error answer keeps its OAuth error code when it is a standard one (the SDK's next step depends
 * on it: invalid_grant asks for a new authorization), described by the status alone.
 */
const OAUTH_ERROR_CODES: ReadonlySet<string> = new Set(Object.values(OAuthErrorCode));

export function oauthAnswers(fetch: FetchLike): FetchLike {
  return async (url, init) => {
    const res = await fetch(url, init);
    if (res.status < 400) return res;
    const code = await oauthErrorCode(res);
    const description = code ? `${statusText(res.status)} (${code})` : statusText(res.status);
    return statusOnly(res, JSON.stringify({ error: code ?? 'server_error', error_description: description }), 'application/json');
  };
}

/**
 * The requests of one refresh, watched for an outage: a POST (a token request) that got no answer
 * or a 5xx. The SDK reads either as a reason to start a new authorization; it is not a refusal.
 */
export function outageWatch(fetch: FetchLike): { fetch: FetchLike; outage: () => string | undefined } {
  let outage: string | undefined;
  const watched: FetchLike = async (url, init) => {
    const post = (init?.method ?? 'GET').toUpperCase() === 'POST';
    try {
      const res = await fetch(url, init);
      if (post && res.status >= 500) outage ??= `HTTP ${res.status}`;
      return res;
    } catch (err) {
      if (post) outage ??= mcpErrorText(err);
      throw err;
    }
  };
  return { fetch: watched, outage: () => outage };
}
