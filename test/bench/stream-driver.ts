import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The outside of `npm run bench:stream` (stream-bench.ts), in a process of its own so that its CPU
 * is not counted as the engine's: the streaming endpoint the runs' model calls, and the clients
 * that start runs through the API and follow their event streams. Told what to do over IPC.
 */

const CHUNKS = 20;
const CHUNK_MS = 60;
const wallNow = () => performance.timeOrigin + performance.now();
const STAMP = /⟨(\d+\.\d+)⟩/g;

/** The endpoint: streamed, 20 stamped chunks 60 ms apart; otherwise one answer after as long. */
async function startEndpoint(): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      const stream = (JSON.parse(raw) as { stream?: boolean }).stream === true;
      const base = { id: 'chatcmpl-b', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench' };
      const usage = { prompt_tokens: 50, completion_tokens: CHUNKS * 3, total_tokens: 50 + CHUNKS * 3 };
      if (!stream) {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({
            id: 'chatcmpl-b', object: 'chat.completion', created: 1_700_000_000, model: 'bench',
            choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'word '.repeat(CHUNKS) } }], usage,
          }));
        }, (CHUNKS - 1) * CHUNK_MS);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
      let n = 0;
      const tick = () => {
        send({ ...base, choices: [{ index: 0, delta: { content: `⟨${wallNow().toFixed(3)}⟩word ` }, finish_reason: null }] });
        if (++n < CHUNKS) return void setTimeout(tick, CHUNK_MS);
        send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
        send({ ...base, choices: [], usage });
        res.end('data: [DONE]\n\n');
      };
      tick();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Follows a run's event stream to run_ended; for each stamp in a text_delta, how long it took to arrive. */
async function follow(apiUrl: string, runId: string, latencies: number[]): Promise<void> {
  const res = await fetch(`${apiUrl}/v1/runs/${runId}/events`);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body!) {
    const now = wallNow();
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    const blocks = buffer.split('\n\n');
    buffer = blocks.pop() ?? '';
    for (const block of blocks) {
      if (block.includes('event: text_delta')) for (const m of block.matchAll(STAMP)) latencies.push(now - Number(m[1]));
      if (block.includes('event: run_ended')) {
        if (!block.includes('"status":"completed"')) throw new Error(`run ${runId} did not complete: ${block}`);
        return;
      }
    }
  }
  throw new Error(`the event stream of ${runId} ended before run_ended`);
}


async function runMany(apiUrl: string, agentId: string, n: number, latencies: number[]): Promise<void> {
  await Promise.all(Array.from({ length: n }, async () => {
    const res = await fetch(`${apiUrl}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agentId, input: 'go' }) });
    const { id } = (await res.json()) as { id: string };
    await follow(apiUrl, id, latencies);
  }));
}

export type DriverCommand = { apiUrl: string; agentId: string; n: number };

void (async () => {
  const endpoint = await startEndpoint();
  process.send!({ baseUrl: endpoint.baseUrl });
  process.on('message', (command: DriverCommand | 'stop') => {
    if (command === 'stop') {
      void endpoint.close().then(() => process.exit(0));
      return;
    }
    const latencies: number[] = [];
    runMany(command.apiUrl, command.agentId, command.n, latencies).then(
      () => process.send!({ latencies }),
      (err: Error) => process.send!({ error: err.message }),
    );
  });
})();
