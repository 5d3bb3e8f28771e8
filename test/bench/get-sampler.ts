/**
 * The GETs of `npm run bench:load`'s read phase, sent from a process of their own, as a load
 * generator would send them: at a fixed rate, on schedule whatever the answers' pace (open loop).
 * The bench process meanwhile drives the runs (50 POSTs and long polls at once); GETs timed there
 * would also time its own event loop, not only the API's answers.
 *
 * Forked with IPC. It takes `{type: 'start', url, rate}`, warms up (its HTTP client and JIT, on
 * /healthz) and says `{type: 'ready'}`; then it takes `{type: 'id', id}` for each run as it starts,
 * then `{type: 'stop'}`; it answers with `{ms, errors}` (the latencies of the answered GETs, and how
 * many failed or answered another run) and exits.
 */
type Message = { type: 'start'; url: string; rate: number } | { type: 'id'; id: string } | { type: 'stop' };

/** connections opened before the measured GETs: at 200 req/s, eight are in flight at once only when GETs take 40 ms */
const WARM_CONNECTIONS = 8;
const ids: string[] = [];
const ms: number[] = [];
const inflight: Promise<void>[] = [];
let errors = 0;
let running = false;
let sending: Promise<void> | undefined;

async function getOne(url: string, id: string): Promise<void> {
  const t = performance.now();
  try {
    const res = await fetch(`${url}/v1/runs/${id}`);
    const body = (await res.json()) as { id?: string };
    ms.push(performance.now() - t);
    if (res.status !== 200 || body.id !== id) errors += 1;
  } catch {
    errors += 1;
  }
}

async function send(url: string, rate: number): Promise<void> {
  const t0 = performance.now();
  for (let i = 0; running; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (!running) break;
    if (ids.length > 0) inflight.push(getOne(url, ids[i % ids.length]));
  }
}

/**
 * Cold, the first requests take tens of milliseconds on the client side alone. Several at once, so
 * that the connections the measured GETs need are open before they start (as a load generator
 * opens its connections first): a connection made during the start-up burst would be timed too.
 */
async function warmUp(url: string): Promise<void> {
  await Promise.all(Array.from({ length: WARM_CONNECTIONS }, async () => {
    for (let i = 0; i < 50; i++) await (await fetch(`${url}/healthz`)).arrayBuffer();
  }));
}

process.on('message', (m: Message) => {
  if (m.type === 'start') {
    running = true;
    sending = warmUp(m.url).then(() => {
      process.send!({ type: 'ready' });
      return send(m.url, m.rate);
    });
  } else if (m.type === 'id') {
    ids.push(m.id);
  } else {
    running = false;
    void (async () => {
      await sending;
      await Promise.all(inflight);
      process.send!({ ms, errors }, () => process.disconnect());
    })();
  }
});
