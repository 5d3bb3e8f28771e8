import { randomBytes } from 'node:crypto';
import { percentile } from './load-processes';

/** What `npm run bench:tenants`'s two parts share: an API client with credentials, its keys, its printed lines. */

type Json = Record<string, unknown>;

/** The engine's keys in this run: API_KEY (the tenant `default`) and ADMIN_API_KEY (the operator). */
export const benchKeys = { apiKey: `bench-api-${randomBytes(16).toString('hex')}`, adminApiKey: `bench-admin-${randomBytes(16).toString('hex')}` };

export interface KeyedApi {
  url: string;
  post(path: string, body: Json): Promise<Json>;
  get(path: string): Promise<{ status: number; body: Json }>;
}

/** The API at `url` as the holder of `key` sees it; `tenant` sends X-Tenant-Id (the operator acting in that tenant). */
export function keyedApi(url: string, key: string, tenant?: string): KeyedApi {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(tenant ? { 'x-tenant-id': tenant } : {}) };
  return {
    url,
    async post(path, body) {
      const res = await fetch(`${url}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as Json;
      if (res.status >= 300) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    },
    async get(path) {
      const res = await fetch(`${url}${path}`, { headers });
      return { status: res.status, body: (await res.json()) as Json };
    },
  };
}

/** A scripted agent of one turn (no tool, no LLM): its runs answer "done". */
export const oneTurnAgent = (name: string) => ({ name, model: { provider: 'scripted', script: [{ text: 'done' }] } });

/** Runs `one` over `items`, `concurrency` at a time; the first failure fails it (after the ones in flight). */
export async function inLanes<T>(items: readonly T[], concurrency: number, one: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      await one(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

export const ms = (x: number) => `${x.toFixed(2)} ms`;
export const p50p99 = (xs: number[]) => `p50 ${ms(percentile(xs, 50))}, p99 ${ms(percentile(xs, 99))} (n=${xs.length})`;

/** A printed figure: what, how much, the criterion and whether it holds. */
export function line(label: string, value: string, target = '', pass?: boolean): void {
  const verdict = pass === undefined ? '' : pass ? '  pass' : '  FAIL';
  console.log(`${label.padEnd(52)} ${value.padEnd(64)} ${target}${verdict}`);
}
