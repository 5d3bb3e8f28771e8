import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import { checkApiExposure, loadConfig } from '../../platform/config';
import { findIntegrationByName } from '../../store/integrations/integrations';
import { logger, startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const suffix = () => randomUUID().slice(0, 8);

let engine: Engine;
const apps: FastifyInstance[] = [];
const app = async (extra: Partial<Parameters<typeof buildApp>[0]> = {}) => {
  const built = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, ...extra });
  apps.push(built);
  return built;
};

beforeAll(async () => {
  engine = await startEngine('embedded');
});
afterAll(async () => {
  for (const a of apps) await a.close();
  await engine?.close();
});

function expectForbidden(res: LightMyRequestResponse, code: RegExp = /forbidden_(host|origin)/): void {
  expect(res.statusCode).toBe(403);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status: 403, code: expect.stringMatching(code), detail: expect.any(String) });
}

const ROUTES: { name: string; request: InjectOptions }[] = [
  { name: 'a REST route', request: { method: 'GET', url: '/v1/agents' } },
  { name: 'the SSE route', request: { method: 'GET', url: '/v1/runs/run_nothing/events' } },
  { name: '/mcp', request: { method: 'POST', url: '/mcp', payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } } },
  { name: '/docs', request: { method: 'GET', url: '/docs/json' } },
  { name: 'the console', request: { method: 'GET', url: '/console' } },
  { name: 'a health check', request: { method: 'GET', url: '/healthz' } },
  { name: 'an unknown route', request: { method: 'GET', url: '/v1/nothing-here' } },
];
const FOREIGN: [string, Record<string, string>][] = [
  ['a foreign Host', { host: 'evil.example' }],
  ['a foreign Host with a port', { host: 'evil.example:3000' }],
  ['a foreign Origin', { host: 'localhost:3000', origin: 'http://evil.example' }],
  ['Origin: null', { host: '127.0.0.1:3000', origin: 'null' }],
  ['a loopback Origin with a foreign Host', { host: 'evil.example', origin: 'http://localhost:3000' }],
];

describe('Host and Origin, on an API listening on loopback', () => {
  let loopbackApp: FastifyInstance;
  beforeAll(async () => {
    loopbackApp = await app();
  });

  test.each(ROUTES.flatMap((r) => FOREIGN.map(([what, headers]) => [r.name, what, { ...r.request, headers: { ...r.request.headers, ...headers } }] as const)))(
    '%s refuses %s with 403 problem+json', async (_route, _what, request) => {
      expectForbidden(await loopbackApp.inject(request));
    },
  );

  test('loopback names are accepted with or without a port, in any case; so is a loopback Origin', async () => {
    const api = await app();
    for (const host of ['localhost', 'LOCALHOST:3000', '127.0.0.1', '127.0.0.1:8080', '[::1]', '[::1]:3000']) {
      expect((await api.inject({ method: 'GET', url: '/healthz', headers: { host } })).statusCode).toBe(200);
    }
    const res = await api.inject({ method: 'GET', url: '/v1/agents', headers: { host: 'localhost:3000', origin: 'http://127.0.0.1:5173' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('ALLOWED_HOSTS does not open a loopback-bound API to other names', async () => {
    const api = await app({ allowedHosts: ['api.example.com'] });
    expectForbidden(await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'api.example.com' } }));
  });

  test('DNS rebinding: a foreign page can neither create a stdio integration nor make a worker run a stored one', async () => {
    const api = await app({ capabilitiesWaitMs: 30_000 });
    const marker = path.join(os.tmpdir(), `pwned-${suffix()}`);
    const transport = { type: 'stdio', command: 'sh', args: ['-c', `touch ${marker}`] };
    const attack = { host: 'evil.example', origin: 'http://evil.example' };
    const name = `pwn-${suffix()}`;
    expectForbidden(await api.inject({ method: 'POST', url: '/v1/integrations', headers: attack, payload: { name, transport } }));
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();

    // The operator's own integration, created from loopback: the foreign page cannot make a worker start it.
    const created = await api.inject({ method: 'POST', url: '/v1/integrations', payload: { name, transport } });
    expect(created.statusCode).toBe(201);
    const capabilities = `/v1/integrations/${created.json().id}/capabilities`;
    try {
      expectForbidden(await api.inject({ method: 'GET', url: capabilities, headers: attack }));
      expect(existsSync(marker)).toBe(false);
      // The control: from loopback the same request does reach a worker, which runs the command.
      const answered = api.inject({ method: 'GET', url: capabilities });
      await waitFor(async () => existsSync(marker), 30_000, 'the command ran');
      await answered;
    } finally {
      await rm(marker, { force: true });
    }
  }, 90_000);
});

describe('Host and Origin, on an API listening on another address', () => {
  test('without ALLOWED_HOSTS any Host is answered, and an Origin only when it is the request\'s own host', async () => {
    const api = await app({ listenHost: '0.0.0.0' });
    expect((await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'engine.internal:3000' } })).statusCode).toBe(200);
    expect((await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'engine.internal:3000', origin: 'https://engine.internal:3000' } })).statusCode).toBe(200);
    expectForbidden(await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'engine.internal:3000', origin: 'https://evil.example' } }));
    expectForbidden(await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'engine.internal:3000', origin: 'null' } }));
  });

  test('with ALLOWED_HOSTS only those names and loopback names are answered', async () => {
    const api = await app({ listenHost: '0.0.0.0', allowedHosts: ['api.example.com', 'engine.internal:8443'] });
    for (const host of ['api.example.com', 'API.example.com:443', 'engine.internal:8443', 'localhost:3000']) {
      expect((await api.inject({ method: 'GET', url: '/healthz', headers: { host } })).statusCode).toBe(200);
    }
    for (const host of ['evil.example', 'engine.internal:9000', '10.0.0.5:3000']) {
      expectForbidden(await api.inject({ method: 'GET', url: '/healthz', headers: { host } }));
    }
    expect((await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'api.example.com', origin: 'https://api.example.com' } })).statusCode).toBe(200);
    expectForbidden(await api.inject({ method: 'GET', url: '/healthz', headers: { host: 'api.example.com', origin: 'https://evil.example' } }));
  });
});

describe('CORS', () => {
  const ORIGIN = 'https://app.example.com';

  test('only an origin listed in CORS_ORIGINS gets CORS headers, and its preflight is answered before authentication', async () => {
    const api = await app({ corsOrigins: [ORIGIN], apiKey: 'k'.repeat(32) });
    const preflight = await api.inject({
      method: 'OPTIONS', url: '/v1/agents',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers).toMatchObject({ 'access-control-allow-origin': ORIGIN, 'access-control-allow-methods': expect.stringContaining('POST') });
    expect(String(preflight.headers['access-control-allow-headers'])).toContain('authorization');

    const get = await api.inject({ method: 'GET', url: '/v1/agents', headers: { origin: ORIGIN, authorization: `Bearer ${'k'.repeat(32)}` } });
    expect(get.statusCode).toBe(200);
    expect(get.headers['access-control-allow-origin']).toBe(ORIGIN);

    expectForbidden(await api.inject({ method: 'OPTIONS', url: '/v1/agents', headers: { origin: 'https://other.example', 'access-control-request-method': 'POST' } }));
  });
});

describe('an API off loopback needs a key', () => {
  test('checkApiExposure refuses a non-loopback HOST without API_KEY, saying why', () => {
    expect(() => checkApiExposure({ host: '0.0.0.0' })).toThrow(/HOST=0\.0\.0\.0 is not a loopback address and no API_KEY is set.*run commands on the workers/s);
    expect(() => checkApiExposure({ host: '::' })).toThrow(/API_KEY/);
    for (const host of ['127.0.0.1', 'localhost', '::1', '[::1]', '127.0.0.2']) expect(() => checkApiExposure({ host })).not.toThrow();
    expect(() => checkApiExposure({ host: '0.0.0.0', apiKey: 'k'.repeat(32) })).not.toThrow();
  });

  test('the admin key must differ from the API key, and the new variables are validated', () => {
    expect(() => loadConfig({ API_KEY: 'k'.repeat(32), ADMIN_API_KEY: 'k'.repeat(32) })).toThrow(/ADMIN_API_KEY must differ from API_KEY/);
    expect(() => loadConfig({ CORS_ORIGINS: 'app.example.com' })).toThrow(/CORS_ORIGINS/);
    expect(() => loadConfig({ ALLOWED_HOSTS: 'a.example,b example' })).toThrow(/ALLOWED_HOSTS/);
    const config = loadConfig({ ALLOWED_HOSTS: 'API.example.com,engine:8443', CORS_ORIGINS: 'https://App.example.com', ADMIN_API_KEY: 'a'.repeat(32) });
    expect(config).toMatchObject({ allowedHosts: ['api.example.com', 'engine:8443'], corsOrigins: ['https://app.example.com'], adminApiKey: 'a'.repeat(32) });
  });

  test('npm run api exits with that message before connecting to anything', async () => {
    const env = { ...process.env, HOST: '0.0.0.0', API_KEY: '', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const outcome = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['--import', 'tsx', 'api/server.ts'], { cwd: ROOT, env, timeout: 60_000 }, (_err, _stdout, stderr) => {
        resolve({ code: child.exitCode, stderr });
      });
    });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/Refusing to start the API: HOST=0\.0\.0\.0 is not a loopback address and no API_KEY is set/);
  }, 70_000);
});
