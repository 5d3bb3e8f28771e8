/**
 * The GETs of `npm run bench:load`'s read phase and of `npm run bench:tenants`, sent from a process
 * of their own, as a load generator would send them: at a fixed rate, on schedule whatever the
 * answers' pace (open loop). The bench process meanwhile drives the runs (50 POSTs and long polls
 * at once) or serves the API; GETs timed there would also time its own event loop, not only the
 * API's answers.
 *
 * Forked with IPC (sampler-process.ts drives it). It takes `{type: 'start', url, rate, key?, list?}`,
 * warms up (its HTTP client and JIT, on /healthz) and says `{type: 'ready'}`; then it takes
 * `{type: 'id', id}` for each run as it starts, then `{type: 'stop'}`; it answers with `{ms, errors,
 * firstError}` (the latencies of the answered GETs, how many failed or answered another run, and
 * what the first of those answered) and exits.
 * `key` goes in an `Authorization: Bearer` header. With `list`, every GET asks for `list.path`
 * instead of a run, and is an error unless its `list.field` holds `list.count` items.
 */
export interface ListTarget {
  path: string;
  field: string;
  count: number;
}

export interface SamplerStart {
  url: string;
  rate: number;
  key?: string;
  list?: ListTarget;
}

type Message = ({ type: 'start' } & SamplerStart) | { type: 'id'; id: string } | { type: 'stop' };

/** connections opened before the measured GETs: at 200 req/s, eight are in flight at once only when GETs take 40 ms */
const WARM_CONNECTIONS = 8;
const ids: string[] = [];
const ms: number[] = [];
const inflight: Promise<void>[] = [];
let errors = 0;
/** what the first failed GET answered or threw, to say why */
let firstError: string | undefined;
let running = false;
let sending: Promise<void> | undefined;

/** One GET, timed: of the run `id`, or of the list. */
async function getOne(start: SamplerStart, id: string | undefined): Promise<void> {
  const headers: Record<string, string> = start.key ? { authorization: `Bearer ${start.key}` } : {};
  const t = performance.now();
  try {
    const res = await fetch(`${start.url}${start.list ? start.list.path : `/v1/runs/${id}`}`, { headers });
    const body = (await res.json()) as Record<string, unknown>;
    ms.push(performance.now() - t);
    const right = start.list
      ? Array.isArray(body[start.list.field]) && (body[start.list.field] as unknown[]).length === start.list.count
      : body.id === id;
    if (res.status !== 200 || !right) failed(`${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  } catch (err) {
    failed((err as Error).message);
  }
}

function failed(why: string): void {
  errors += 1;
  firstError ??= why;
}

async function send(start: SamplerStart): Promise<void> {
  const t0 = performance.now();
  for (let i = 0; running; i++) {
    const wait = t0 + (i * 1000) / start.rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (!running) break;
    if (start.list) inflight.push(getOne(start, undefined));
    else if (ids.length > 0) inflight.push(getOne(start, ids[i % ids.length]));
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
      return send(m);
    });
  } else if (m.type === 'id') {
    ids.push(m.id);
  } else {
    running = false;
    void (async () => {
      await sending;
      await Promise.all(inflight);
      process.send!({ ms, errors, firstError }, () => process.disconnect());
    })();
  }
});
