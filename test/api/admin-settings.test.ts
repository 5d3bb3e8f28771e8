import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import { loadIntegrationsFile } from '../../use-cases/integrations/integrations-file';
import { ConfigError } from '../../platform/config';
import { findIntegrationByName } from '../../store/integrations/integrations';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';

/*
 * The settings that decide approval (trustAnnotations), placement (taskQueue) and bounds
 * (maxResultBytes, maxResourceBytes) are the operator's; the bounds have caps nobody passes.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const MiB = 1024 * 1024;
const suffix = () => randomUUID().slice(0, 8);
const http = { type: 'http', url: 'https://mcp.example.com/mcp' };

let engine: Engine;
let app: FastifyInstance;

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY });
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
});

const as = (key: string) => (options: InjectOptions) => app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const user = as(API_KEY);
const admin = as(ADMIN_KEY);

function expectProblem(res: LightMyRequestResponse, status: number, code: string, field: string): void {
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect({ status: res.statusCode, code: res.json().code, field: res.json().field }).toEqual({ status, code, field });
  expect(res.json().detail).toContain(field);
}

describe('settings that decide approval, placement and bounds', () => {
  test.each([
    ['trustAnnotations', true],
    // The engine then sends a call that may have run again: the operator's word that the server deduplicates it.
    ['retryNonIdempotent', true],
    ['taskQueue', 'gpu-box'],
    ['maxResultBytes', 2 * MiB],
    ['sampling', 'allow'],
    ['sampling', 'approve'],
    ['samplingMaxTokens', 4096],
    ['taskTimeout', '2h'],
    // A call holds a worker's slot as long as these let it.
    ['toolTimeoutMs', 3_600_000],
    ['maxTotalTimeoutMs', 3_600_000],
    ['elicitationTimeout', '1h'],
    ['maxConcurrentCalls', 50],
  ])('%s: the user key gets a 403 naming the field on POST and PATCH; the admin key sets it', async (field, value) => {
    const name = `adm-${suffix()}`;
    expectProblem(await user({ method: 'POST', url: '/v1/integrations', payload: { name, transport: http, [field]: value } }), 403, 'admin_required', `body.${field}`);
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();

    const created = await user({ method: 'POST', url: '/v1/integrations', payload: { name, transport: http } });
    expect(created.statusCode).toBe(201);
    const url = `/v1/integrations/${created.json().id}`;
    expectProblem(await user({ method: 'PATCH', url, payload: { [field]: value } }), 403, 'admin_required', `body.${field}`);
    expect((await user({ method: 'GET', url })).json()[field]).toBe(created.json()[field]);

    const changed = await admin({ method: 'PATCH', url, payload: { [field]: value } });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()[field]).toEqual(value);
  });

  test('what does not widen stays the user\'s: trust off, a bound lowered or at its default, the same value again', async () => {
    const created = await admin({ method: 'POST', url: '/v1/integrations', payload: {
      name: `adm-${suffix()}`, transport: http, trustAnnotations: true, retryNonIdempotent: true, taskQueue: 'gpu-box', maxResultBytes: 8 * MiB,
    } });
    expect(created.statusCode).toBe(201);
    const url = `/v1/integrations/${created.json().id}`;
    for (const payload of [{ taskQueue: 'gpu-box', trustAnnotations: true }, { maxResultBytes: 4 * MiB }, { maxResourceBytes: MiB }, { trustAnnotations: false },
      { retryNonIdempotent: true }, { retryNonIdempotent: false },
      { sampling: 'never' }, { samplingMaxTokens: 100 }, { taskTimeout: '30m' },
      { toolTimeoutMs: 5_000 }, { maxTotalTimeoutMs: 60_000 }, { elicitationTimeout: '1m' }, { maxConcurrentCalls: 2 }, { toolTimeoutMs: 60_000 }]) {
      const res = await user({ method: 'PATCH', url, payload });
      expect([res.statusCode, res.json()]).toEqual([200, expect.objectContaining(payload)]);
    }
    // Back above what it is now (4 MiB) and its default (1 MiB): a raise again.
    expectProblem(await user({ method: 'PATCH', url, payload: { maxResultBytes: 8 * MiB } }), 403, 'admin_required', 'body.maxResultBytes');
    // Unpinning moves the server to other machines' workers as much as pinning does.
    expectProblem(await user({ method: 'PATCH', url, payload: { taskQueue: null } }), 403, 'admin_required', 'body.taskQueue');
    expect((await user({ method: 'POST', url: '/v1/integrations', payload: { name: `adm-${suffix()}`, transport: http, maxResultBytes: MiB, trustAnnotations: false, taskQueue: null } })).statusCode).toBe(201);
  });

  test.each([
    ['maxResultBytes', 64 * MiB],
    ['maxResourceBytes', 256 * MiB],
  ])('%s above its cap (%d) is a 400 naming the field, even for the admin key; the cap itself is accepted', async (field, cap) => {
    for (const value of [cap + 1, Number.MAX_SAFE_INTEGER]) {
      expectProblem(await admin({ method: 'POST', url: '/v1/integrations', payload: { name: `cap-${suffix()}`, transport: http, [field]: value } }), 400, 'validation', `body.${field}`);
    }
    const created = await admin({ method: 'POST', url: '/v1/integrations', payload: { name: `cap-${suffix()}`, transport: http, [field]: cap } });
    expect([created.statusCode, created.json()[field]]).toEqual([201, cap]);
    expectProblem(await admin({ method: 'PATCH', url: `/v1/integrations/${created.json().id}`, payload: { [field]: cap + 1 } }), 400, 'validation', `body.${field}`);
  });
});

describe('the same settings in an import and in INTEGRATIONS_FILE', () => {
  test('an import: the user key gets a 403 naming the server\'s field, the admin key stores them', async () => {
    const name = `imp-${suffix()}`;
    const entry = {
      url: 'https://mcp.example.com/mcp', trustAnnotations: true, retryNonIdempotent: true, taskQueue: 'gpu-box', maxResultBytes: 2 * MiB, maxResourceBytes: MiB, sampling: 'allow', taskTimeout: '3h',
      maxConcurrentCalls: 40,
    };
    const refused = await user({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [name]: entry } } });
    expectProblem(refused, 403, 'admin_required', [
      `body.mcpServers.${name}.trustAnnotations`, `body.mcpServers.${name}.retryNonIdempotent`, `body.mcpServers.${name}.taskQueue`, `body.mcpServers.${name}.sampling`,
      `body.mcpServers.${name}.taskTimeout`, `body.mcpServers.${name}.maxConcurrentCalls`, `body.mcpServers.${name}.maxResultBytes`].join(', '));
    expect(await findIntegrationByName(engine.db, name)).toBeUndefined();

    expect((await admin({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [name]: entry } } })).statusCode).toBe(201);
    expect(await findIntegrationByName(engine.db, name)).toMatchObject({
      trustAnnotations: true, retryNonIdempotent: true, taskQueue: 'gpu-box', maxResultBytes: 2 * MiB, maxResourceBytes: MiB, sampling: 'allow', taskTimeoutMs: 3 * 3_600_000,
      maxConcurrentCalls: 40,
    });
    // Nothing above the defaults: the user's to import.
    const plain = `imp-${suffix()}`;
    expect((await user({ method: 'POST', url: '/v1/integrations/import', payload: { servers: { [plain]: { type: 'http', url: 'https://mcp.example.com/mcp', maxResultBytes: 1024 } } } })).statusCode).toBe(201);
  });

  test('an import above a cap is a 400 naming the field', async () => {
    const name = `imp-${suffix()}`;
    const res = await admin({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [name]: { url: 'https://mcp.example.com/mcp', maxResultBytes: 2 ** 53 } } } });
    expectProblem(res, 400, 'validation', `body.mcpServers.${name}.maxResultBytes`);
  });

  test('INTEGRATIONS_FILE sets them (the file is the operator\'s), updates them by name, and refuses a value above a cap', async () => {
    const dir = path.join(testStack().tmpDir, `admin-settings-${suffix()}`);
    await mkdir(dir, { recursive: true });
    try {
      const file = path.join(dir, 'mcp.json');
      const name = `file-${suffix()}`;
      const write = (settings: Record<string, unknown>) => writeFile(file, JSON.stringify({ mcpServers: { [name]: { command: 'node', args: ['s.js'], ...settings } } }));
      await write({ taskQueue: 'gpu-box', trustAnnotations: true, retryNonIdempotent: true, maxResultBytes: 64 * MiB });
      expect(await loadIntegrationsFile({ db: engine.db, file, env: {}, logger })).toMatchObject({ created: [name] });
      expect(await findIntegrationByName(engine.db, name)).toMatchObject({
        taskQueue: 'gpu-box', trustAnnotations: true, retryNonIdempotent: true, maxResultBytes: 64 * MiB,
      });
      await write({ taskQueue: 'other-box', trustAnnotations: true, maxResultBytes: 64 * MiB });
      expect(await loadIntegrationsFile({ db: engine.db, file, env: {}, logger })).toMatchObject({ updated: [name] });
      expect((await findIntegrationByName(engine.db, name))?.taskQueue).toBe('other-box');

      await write({ maxResourceBytes: 256 * MiB + 1 });
      const err = await loadIntegrationsFile({ db: engine.db, file, env: {}, logger }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(new RegExp(`mcpServers\\.${name}\\.maxResourceBytes`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
