import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local HTTP server that speaks the real wire formats: OpenAI chat completions
 * (`POST /v1/chat/completions`, JSON or SSE chunks) and Anthropic Messages (`POST /v1/messages`,
 * JSON or SSE events). Each request takes the next reply from the queue and is recorded.
 */
export interface Reply {
  text?: string;
  toolCalls?: { id: string; name: string; args: Record<string, unknown> }[];
  /** `cached`: of the input tokens, those read from the prompt cache (OpenAI's cached_tokens, Anthropic's cache_read_input_tokens) */
  usage?: { input: number; output: number; cached?: number };
  /** streaming only: the connection breaks after this many chunks (the text's first piece is the second) */
  cutAfterChunks?: number;
  /** answer one JSON response even to a streaming request, as some endpoints do */
  json?: boolean;
  /**
   * streaming, OpenAI only: text, or one tool call's arguments, without end, as fast as the client
   * reads; past ENDLESS_CAP_BYTES (a net for the machine running the tests) the answer ends as usual
   */
  endless?: 'text' | 'toolArguments';
}

/** How much an endless reply writes before it gives up and ends the answer after all. */
export const ENDLESS_CAP_BYTES = 16 * 1024 * 1024;
export interface ErrorReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}
export type Step = Reply | ErrorReply;

export interface RecordedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  at: number;
  /** an endless reply: whether the client went first (it stopped reading), or the server reached its cap */
  endedBy?: 'client' | 'server';
}

export interface FakeLlmServer {
  baseUrl: string;
  requests: RecordedRequest[];
  /** replies to play, in order; the last one repeats */
  play(steps: Step[]): void;
  close(): Promise<void>;
}

const isError = (s: Step): s is ErrorReply => 'status' in s;

export async function startFakeLlmServer(): Promise<FakeLlmServer> {
  let steps: Step[] = [];
  let next = 0;
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => { raw += chunk; });
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      requests.push({ path: req.url ?? '', headers: req.headers, body, at: Date.now() });
      const step = steps[Math.min(next++, steps.length - 1)] ?? { text: '' };
      if (isError(step)) {
        res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
        res.end(JSON.stringify(step.body));
        return;
      }
      const anthropic = req.url?.endsWith('/messages') ?? false;
      if (body.stream && step.endless) {
        void writeEndless(res, step.endless, (endedBy) => { requests[requests.length - 1].endedBy = endedBy; });
        return;
      }
      if (body.stream && !step.json) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const events = anthropic ? anthropicEvents(step) : openAiChunks(step);
        for (const event of events.slice(0, step.cutAfterChunks ?? events.length)) res.write(event);
        // A moment before the break, so that the chunks sent are read as such.
        if (step.cutAfterChunks !== undefined) setTimeout(() => res.destroy(), 300);
        else res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(anthropic ? anthropicMessage(step) : openAiCompletion(step)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    play(s) {
      steps = s;
      next = 0;
      requests.length = 0;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Writes as fast as the client reads (waiting for each drain), until the client goes or the cap is reached. */
async function writeEndless(res: http.ServerResponse, what: 'text' | 'toolArguments', ended: (by: 'client' | 'server') => void): Promise<void> {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake' };
  const chunk = (delta: unknown, finish: string | null = null) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const piece = 'x'.repeat(4096);
  const more = what === 'text' ? chunk({ content: piece }) : chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk({ role: 'assistant', content: '' }));
  if (what === 'toolArguments') res.write(chunk({ tool_calls: [{ index: 0, id: 'call_endless', type: 'function', function: { name: 'get_weather', arguments: '{"city": "' } }] }));
  res.once('close', () => ended(res.writableFinished ? 'server' : 'client'));
  for (let sent = 0; sent < ENDLESS_CAP_BYTES && !res.destroyed; sent += piece.length) {
    if (!res.write(more)) {
      await new Promise<void>((resolve) => {
        const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
        res.on('drain', done).on('close', done);
      });
    }
  }
  if (res.destroyed) return;
  if (what === 'toolArguments') res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] }));
  res.end(`${chunk({}, what === 'text' ? 'stop' : 'tool_calls')}data: [DONE]\n\n`);
}

const usageOf = (r: Reply) => r.usage ?? { input: 11, output: 7 };
/** OpenAI's usage: prompt tokens include the cached ones. */
const openAiUsage = (u: { input: number; output: number; cached?: number }) => ({
  prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output,
  ...(u.cached ? { prompt_tokens_details: { cached_tokens: u.cached } } : {}),
});
/** Anthropic's usage: input tokens exclude the ones read from the cache. */
const anthropicUsage = (u: { input: number; cached?: number }, output: number) => ({
  input_tokens: u.input - (u.cached ?? 0), output_tokens: output, ...(u.cached ? { cache_read_input_tokens: u.cached } : {}),
});

function openAiCompletion(r: Reply) {
  const calls = r.toolCalls ?? [];
  const u = usageOf(r);
  return {
    id: 'chatcmpl-1', object: 'chat.completion', created: 1_700_000_000, model: 'fake',
    choices: [{
      index: 0, finish_reason: calls.length ? 'tool_calls' : 'stop',
      message: {
        role: 'assistant', content: r.text ?? null,
        ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) } : {}),
      },
    }],
    usage: openAiUsage(u),
  };
}

function openAiChunks(r: Reply): string[] {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake' };
  const chunk = (delta: unknown, finish: string | null = null) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const out = [chunk({ role: 'assistant', content: '' })];
  // Text in two pieces, arguments in two pieces: the client must reassemble both.
  const text = r.text ?? '';
  if (text) out.push(chunk({ content: text.slice(0, 3) }), chunk({ content: text.slice(3) }));
  (r.toolCalls ?? []).forEach((c, index) => {
    const args = JSON.stringify(c.args);
    out.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: args.slice(0, 2) } }] }));
    out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(2) } }] }));
  });
  out.push(chunk({}, r.toolCalls?.length ? 'tool_calls' : 'stop'));
  const u = usageOf(r);
  out.push(`data: ${JSON.stringify({ ...base, choices: [], usage: openAiUsage(u) })}\n\n`);
  out.push('data: [DONE]\n\n');
  return out;
}

function anthropicMessage(r: Reply) {
  const u = usageOf(r);
  return {
    id: 'msg_1', type: 'message', role: 'assistant', model: 'fake',
    content: [
      ...(r.text ? [{ type: 'text', text: r.text }] : []),
      ...(r.toolCalls ?? []).map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args })),
    ],
    stop_reason: r.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null,
    usage: anthropicUsage(u, u.output),
  };
}

function anthropicEvents(r: Reply): string[] {
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const u = usageOf(r);
  const out = [ev('message_start', {
    message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'fake', content: [], stop_reason: null, stop_sequence: null, usage: anthropicUsage(u, 1) },
  })];
  let index = 0;
  if (r.text) {
    out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: r.text.slice(0, 3) } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: r.text.slice(3) } }));
    out.push(ev('content_block_stop', { index }));
    index++;
  }
  for (const c of r.toolCalls ?? []) {
    const args = JSON.stringify(c.args);
    out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(0, 2) } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(2) } }));
    out.push(ev('content_block_stop', { index }));
    index++;
  }
  out.push(ev('message_delta', { delta: { stop_reason: r.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: u.output } }));
  out.push(ev('message_stop', {}));
  return out;
}
