import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../api/app';
import { createPool } from '../../store/pool';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { proxyDatabase } from '../support/tcp-proxy';

let engine: Engine;
const apps: FastifyInstance[] = [];
const app = async (extra: Partial<Parameters<typeof buildApp>[0]> = {}) => {
  const built = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, ...extra });
  apps.push(built);
  return built;
};

beforeAll(async () => {
  engine = await startEngine('embedded');
});
afterAll(async () => {
  for (const a of apps) await a.close();
  await engine.close();
});

const isProblem = (res: { headers: Record<string, unknown> }) => String(res.headers['content-type']).startsWith('application/problem+json');

describe('API hardening', () => {
  test('while the database is unreachable, the API answers 503 problem+json with Retry-After, not 500', async () => {
    const { proxy, url } = await proxyDatabase(testStack().databases.embedded);
    const db = createPool(url, logger);
    try {
      const api = await app({ db });
      expect((await api.inject({ method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
      proxy.cut();
      const res = await api.inject({ method: 'GET', url: '/v1/agents' });
      expect(res.statusCode).toBe(503);
      expect(isProblem(res)).toBe(true);
      expect(res.headers['retry-after']).toBe('5');
      proxy.restore();
      expect((await api.inject({ method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    } finally {
      await db.end();
      await proxy.close();
    }
  });

  test('a body over the limit answers 413 problem+json', async () => {
    const api = await app();
    const res = await api.inject({
      method: 'POST', url: '/v1/agents', headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'big', instructions: 'x'.repeat(9 * 1024 * 1024), model: { provider: 'scripted', script: [] } }),
    });
    expect(res.statusCode).toBe(413);
    expect(isProblem(res)).toBe(true);
  });

  test('past the rate limit a client gets 429 problem+json with Retry-After; health checks are not limited', async () => {
    const api = await app({ rateLimitPerMinute: 3 });
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await api.inject({ method: 'GET', url: '/v1/agents' })).statusCode);
    expect(codes).toEqual([200, 200, 200, 429]);
    const limited = await api.inject({ method: 'GET', url: '/v1/agents' });
    expect(limited.statusCode).toBe(429);
    expect(isProblem(limited)).toBe(true);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.json()).toMatchObject({ status: 429, code: 'rate_limited' });
    for (let i = 0; i < 5; i++) expect((await api.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  test('with an API key, requests without it are refused before any work, and the key holders share one budget', async () => {
    const key = 'k'.repeat(32);
    const api = await app({ rateLimitPerMinute: 2, apiKey: key });
    for (let i = 0; i < 4; i++) {
      // A different invented key each time: each is refused cheaply (no database work), none counts as the key.
      expect((await api.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer made-up-${i}` } })).statusCode).toBe(401);
    }
    const withKey = [];
    for (let i = 0; i < 3; i++) withKey.push((await api.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${key}` } })).statusCode);
    expect(withKey).toEqual([200, 200, 429]);
  });

  test('the admin key has a budget of its own: a flood with the user key does not limit the operator', async () => {
    const [user, admin] = ['u'.repeat(32), 'a'.repeat(32)];
    const api = await app({ rateLimitPerMinute: 2, apiKey: user, adminApiKey: admin });
    const as = (key: string) => api.inject({ method: 'GET', url: '/v1/agents', headers: { authorization: `Bearer ${key}` } });
    const codes = { user: [] as number[], admin: [] as number[] };
    for (let i = 0; i < 3; i++) codes.user.push((await as(user)).statusCode);
    for (let i = 0; i < 3; i++) codes.admin.push((await as(admin)).statusCode);
    expect(codes).toEqual({ user: [200, 200, 429], admin: [200, 200, 429] });
  });

  test('/readyz answers 503 when no worker polls the task queue', async () => {
    const api = await app({ taskQueue: `nobody-polls-${Date.now()}` });
    const res = await api.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ detail: 'Not ready: no worker polls the task queue', checks: { database: 'ok', temporal: 'ok', workers: 'none polling' } });
  });
});

/** A small seeded generator, so that a failing input can be reproduced from the test's output. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const NASTY_STRINGS = ['', ' ', '%00', '../../etc/passwd', 'ü∑é😀', 'a'.repeat(5000), "'; DROP TABLE runs; --", '{{tool_results}}', '${env:HOME}', '-1', '1e309', 'null', 'true', '[]', '{}'];

function randomValue(rand: () => number, depth = 0): unknown {
  const pick = Math.floor(rand() * (depth > 2 ? 6 : 9));
  switch (pick) {
    case 0: return null;
    case 1: return Math.floor(rand() * 2 ** 40) * (rand() < 0.5 ? -1 : 1);
    case 2: return rand() < 0.5;
    case 3: return NASTY_STRINGS[Math.floor(rand() * NASTY_STRINGS.length)];
    case 4: return rand() * 1e6;
    case 5: return 'x'.repeat(Math.floor(rand() * 300));
    case 6: return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
    default: {
      const keys = ['name', 'model', 'provider', 'script', 'input', 'agentId', 'transport', 'type', 'command', 'url', 'integrationIds', 'maxTurns', 'mcpServers', 'servers', 'env', 'headers', 'toolTimeoutMs', 'text', 'toolCalls'];
      return Object.fromEntries(Array.from({ length: Math.floor(rand() * 5) }, () => [keys[Math.floor(rand() * keys.length)], randomValue(rand, depth + 1)]));
    }
  }
}

describe('malformed input never gets a 5xx', () => {
  test('every schema-described endpoint answers malformed requests with a 4xx problem', async () => {
    const api = await app({ rateLimitPerMinute: 0 });
    type Operation = { responses?: Record<string, { content?: Record<string, unknown> }> };
    const doc = (await api.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, Operation>> };
    // A page for a person's browser (the OAuth callback) says what went wrong in HTML, as its schema declares.
    const htmlOnly = (op: Operation) => Object.values(op.responses ?? {}).every((r) => r.content && Object.keys(r.content).every((t) => t === 'text/html'));
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([m, op]) => ({ path, method: m.toUpperCase(), html: htmlOnly(op) })));
    expect(routes.length).toBeGreaterThan(15);
    const rand = prng(20261122);
    const failures: string[] = [];
    for (const route of routes) {
      for (let i = 0; i < 30; i++) {
        const url = route.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(String(randomValue(rand, 3)))).replace(/\/\//g, '/x/');
        const query = rand() < 0.5 ? `?${['waitMs', 'cursor', 'status', 'limit', 'threadId', 'after'].map((k) => `${k}=${encodeURIComponent(String(randomValue(rand, 3)))}`).join('&')}` : '';
        const options: InjectOptions = { method: route.method as InjectOptions['method'], url: url + query, headers: {} };
        if (['POST', 'PATCH', 'PUT'].includes(route.method)) {
          const kind = rand();
          if (kind < 0.15) options.payload = '{"unterminated": ';
          else if (kind < 0.25) {
            options.payload = 'name=x';
            options.headers = { 'content-type': 'application/x-www-form-urlencoded' };
          } else options.payload = JSON.stringify(randomValue(rand));
          if (!options.headers!['content-type']) options.headers = { 'content-type': 'application/json' };
        }
        if (rand() < 0.2) options.headers = { ...options.headers, 'idempotency-key': String(randomValue(rand, 3)), 'last-event-id': String(randomValue(rand, 3)) };
        const res = await api.inject(options);
        if (res.statusCode >= 500) failures.push(`${options.method} ${options.url} ${String(options.payload).slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 200)}`);
        else if (res.statusCode >= 400 && route.html && !String(res.headers['content-type']).startsWith('text/html')) failures.push(`${options.method} ${options.url} → ${res.statusCode} not the page its schema declares`);
        else if (res.statusCode >= 400 && !route.html && !isProblem(res)) failures.push(`${options.method} ${options.url} → ${res.statusCode} without problem+json`);
      }
    }
    expect(failures).toEqual([]);
  }, 300_000);
});

describe('text PostgreSQL cannot store, and JSON nested too deeply, answer 400 naming the field', () => {
  const post = async (api: FastifyInstance, url: string, body: unknown) => api.inject({
    method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body),
  });
  const scripted = { provider: 'scripted', script: [{ text: 'ok' }] };
  const expect400 = (res: Awaited<ReturnType<typeof post>>, detail: RegExp) => {
    expect({ status: res.statusCode, problem: isProblem(res) }).toEqual({ status: 400, problem: true });
    expect(res.json()).toMatchObject({ status: 400, code: 'validation' });
    expect(res.json().detail).toMatch(detail);
  };

  test('a NUL character in any body field', async () => {
    const api = await app({ rateLimitPerMinute: 0 });
    const name = `nul_${Date.now()}`;
    expect400(await post(api, '/v1/agents', { name, description: 'a\u0000b', model: scripted }), /^body\.description contains a NUL character/);
    expect400(await post(api, '/v1/agents', { name, instructions: 'be\u0000nice', model: scripted }), /^body\.instructions contains a NUL/);
    expect400(await post(api, '/v1/agents', { name, model: { provider: 'scripted', script: [{ text: 'x\u0000' }] } }), /^body\.model\.script\[0\]\.text contains a NUL/);
    expect400(await post(api, '/v1/integrations', { name, transport: { type: 'stdio', command: 'node\u0000', args: ['ok', 'a\u0000'] } }), /^body\.transport\.command contains a NUL/);
    expect400(await post(api, '/v1/integrations', { name, transport: { type: 'stdio', command: 'node', cwd: '/tmp\u0000' } }), /^body\.transport\.cwd contains a NUL/);
    expect400(await post(api, '/v1/integrations', { name, transport: { type: 'stdio', command: 'node' }, disabledPrompts: ['p\u0000'] }), /^body\.disabledPrompts\[0\] contains a NUL/);
    expect400(await post(api, '/v1/integrations', { name, transport: { type: 'stdio', command: 'node', env: { 'K\u0000': 'v' } } }), /^body\.transport\.env has a key containing a NUL character/);

    const agent = await post(api, '/v1/agents', { name, model: scripted });
    expect(agent.statusCode).toBe(201);
    const thread = await post(api, '/v1/threads', { agentId: agent.json().id });
    expect400(await post(api, `/v1/threads/${thread.json().id}/runs`, { input: 'hello\u0000world' }), /^body\.input contains a NUL/);
  });

  test('a lone UTF-16 surrogate, which is not Unicode text', async () => {
    const api = await app({ rateLimitPerMinute: 0 });
    const res = await api.inject({
      method: 'POST', url: '/v1/agents', headers: { 'content-type': 'application/json' },
      payload: `{"name": "sur_${Date.now()}", "model": {"provider": "scripted", "script": [{"toolCalls": [{"name": "t", "arguments": {"q": "\\ud800"}}]}]}}`,
    });
    expect400(res, /^body\.model\.script\[0\]\.toolCalls\[0\]\.arguments\.q contains an unpaired UTF-16 surrogate/);
  });

  test('a NUL in a path parameter or the query string', async () => {
    const api = await app({ rateLimitPerMinute: 0 });
    const res = await api.inject({ method: 'GET', url: '/v1/runs/run%00x' });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toMatch(/^params\.id contains a NUL/);
  });

  test('script arguments nested 5,000 levels deep', async () => {
    const api = await app({ rateLimitPerMinute: 0 });
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const res = await api.inject({
      method: 'POST', url: '/v1/agents', headers: { 'content-type': 'application/json' },
      payload: `{"name": "deep_${Date.now()}", "model": {"provider": "scripted", "script": [{"toolCalls": [{"name": "t", "arguments": ${deep}}]}]}}`,
    });
    expect400(res, /^body\.model\.script\[0\]\.toolCalls\[0\]\.arguments\.a\.a.* is nested deeper than 64 levels/);
    // A reasonable nesting is still accepted.
    let fine: unknown = 1;
    for (let i = 0; i < 40; i++) fine = [fine];
    const ok = await post(api, '/v1/agents', { name: `fine_${Date.now()}`, model: { provider: 'scripted', script: [{ toolCalls: [{ name: 't', arguments: { fine } }] }] } });
    expect(ok.statusCode).toBe(201);
  });
});
