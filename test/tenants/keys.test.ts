import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../api/app';
import { logger, startEngine, type Engine } from '../support/engine';

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const tenantName = () => `t-${randomUUID().slice(0, 8)}`;

let engine: Engine;
let app: FastifyInstance;
/** a second API process on the same database: it hears of revocations through its own change feed */
let second: FastifyInstance;

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  const base = { db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY };
  app = await buildApp(base);
  second = await buildApp(base);
});
afterAll(async () => {
  await app?.close();
  await second?.close();
  await engine?.close();
});

const as = (key: string, on?: FastifyInstance) => (options: InjectOptions) =>
  (on ?? app).inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const admin = as(ADMIN_KEY);

async function newTenant(): Promise<{ id: string; name: string }> {
  const res = await admin({ method: 'POST', url: '/v1/tenants', payload: { name: tenantName() } });
  expect(res.statusCode).toBe(201);
  return res.json();
}

async function issue(by: string, payload: Record<string, unknown>): Promise<{ id: string; key: string; roles: string[] }> {
  const res = await as(by)({ method: 'POST', url: '/v1/keys', payload });
  expect(res.statusCode).toBe(201);
  return res.json();
}

describe('tenants', () => {
  test('the operator creates a tenant; its name is unique; API_KEY may not create one', async () => {
    const name = tenantName();
    const res = await admin({ method: 'POST', url: '/v1/tenants', payload: { name } });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ id: expect.stringMatching(/^ten_/), name });
    expect((await admin({ method: 'POST', url: '/v1/tenants', payload: { name } })).statusCode).toBe(409);
    const byUser = await as(API_KEY)({ method: 'POST', url: '/v1/tenants', payload: { name: tenantName() } });
    expect(byUser.statusCode).toBe(403);
    expect(byUser.json()).toMatchObject({ code: 'forbidden', role: 'operate' });
    expect((await admin({ method: 'POST', url: '/v1/tenants', payload: { name: 'Not A Name' } })).statusCode).toBe(400);
  });

  test('GET /v1/me says who the caller is: tenant, principal, roles', async () => {
    const tenant = await newTenant();
    const issued = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'who', roles: ['read', 'run'] });
    expect((await as(issued.key)({ method: 'GET', url: '/v1/me' })).json()).toEqual({
      tenant: { id: tenant.id, name: tenant.name }, principal: { id: issued.id, name: 'who' }, roles: ['read', 'run'], operator: false,
    });
    expect((await as(API_KEY)({ method: 'GET', url: '/v1/me' })).json()).toMatchObject({ tenant: { id: 'ten_default', name: 'default' }, operator: false });
    const asOperatorInTenant = await admin({ method: 'GET', url: '/v1/me', headers: { 'x-tenant-id': tenant.name } });
    expect(asOperatorInTenant.json()).toMatchObject({ tenant: { id: tenant.id }, operator: true });
  });

  test('an X-Tenant-Id that names no tenant is a 400, not a silent default', async () => {
    const res = await admin({ method: 'GET', url: '/v1/threads', headers: { 'x-tenant-id': 'no-such-tenant' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field: 'X-Tenant-Id' });
  });
});

describe('API keys', () => {
  test('a key is shown once, stored as its digest, and lists without its secret', async () => {
    const tenant = await newTenant();
    const issued = await issue(ADMIN_KEY, { tenantId: tenant.name, name: 'ci', roles: ['read', 'run'] });
    expect(issued).toMatchObject({ id: expect.stringMatching(/^key_/), tenantId: tenant.id, roles: ['read', 'run'] });
    expect(Buffer.from(issued.key.replace(/^ak_/, ''), 'base64url').length).toBeGreaterThanOrEqual(32);
    const listed = await admin({ method: 'GET', url: `/v1/keys?tenantId=${tenant.id}` });
    expect(listed.json().keys).toEqual([expect.objectContaining({ id: issued.id, name: 'ci' })]);
    expect(listed.body).not.toContain(issued.key);
    const { rows } = await engine.db.query<{ key_hash: Buffer }>('SELECT key_hash FROM api_keys WHERE id = $1', [issued.id]);
    expect(rows[0].key_hash.toString('utf8')).not.toContain(issued.key);
    expect((await as(issued.key)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
  });

  test("a tenant's manage issues keys for its own tenant only, and never a role it does not hold", async () => {
    const tenant = await newTenant();
    const manager = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'manager', roles: ['read', 'manage'] });
    const beyond = await as(manager.key)({ method: 'POST', url: '/v1/keys', payload: { name: 'x', roles: ['decide'] } });
    expect(beyond.statusCode).toBe(403);
    expect(beyond.json()).toMatchObject({ code: 'forbidden', field: 'roles' });
    const elsewhere = await as(manager.key)({ method: 'POST', url: '/v1/keys', payload: { tenantId: 'default', name: 'x', roles: ['read'] } });
    expect(elsewhere.statusCode).toBe(404);
    const reader = await issue(manager.key, { name: 'reader', roles: ['read'] });
    const own = await as(manager.key)({ method: 'GET', url: '/v1/keys' });
    expect(own.json().keys.map((k: { id: string }) => k.id).sort()).toEqual([manager.id, reader.id].sort());
    // A read-only key reads but may not act.
    expect((await as(reader.key)({ method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    const act = await as(reader.key)({ method: 'POST', url: '/v1/threads', payload: { agentId: 'whatever' } });
    expect(act.statusCode).toBe(403);
    expect(act.json()).toMatchObject({ code: 'forbidden', role: 'run' });
    expect((await as(reader.key)({ method: 'POST', url: '/v1/keys', payload: { name: 'y', roles: ['read'] } })).statusCode).toBe(403);
  });

  test('a revoked key answers 401 within 1 s on a second API process that had accepted it', async () => {
    const tenant = await newTenant();
    const issued = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'soon-gone', roles: ['read'] });
    expect((await as(issued.key, second)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
    expect((await admin({ method: 'DELETE', url: `/v1/keys/${issued.id}` })).statusCode).toBe(204);
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 1_000) {
      status = (await as(issued.key, second)({ method: 'GET', url: '/v1/threads' })).statusCode;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).toBe(401);
    expect((await admin({ method: 'DELETE', url: `/v1/keys/${issued.id}` })).statusCode).toBe(404);
  });

  test("another tenant's key cannot be revoked by a tenant's manage: it answers as unknown", async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const managerB = await issue(ADMIN_KEY, { tenantId: b.id, name: 'b', roles: ['manage'] });
    const keyA = await issue(ADMIN_KEY, { tenantId: a.id, name: 'a', roles: ['read'] });
    const res = await as(managerB.key)({ method: 'DELETE', url: `/v1/keys/${keyA.id}` });
    expect(res.statusCode).toBe(404);
    expect((await as(keyA.key)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
  });

  test('an expired key and an unknown one answer 401', async () => {
    const tenant = await newTenant();
    const issued = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'brief', roles: ['read'], expiresAt: new Date(Date.now() + 1_500).toISOString() });
    expect((await as(issued.key)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    expect((await as(issued.key)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(401);
    expect((await as(`ak_${'x'.repeat(43)}`)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(401);
    const past = await admin({ method: 'POST', url: '/v1/keys', payload: { name: 'p', roles: ['read'], expiresAt: '2020-01-01T00:00:00Z' } });
    expect(past.statusCode).toBe(400);
  });
});
