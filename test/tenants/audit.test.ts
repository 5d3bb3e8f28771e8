import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions } from 'fastify';
import pino from 'pino';
import { buildApp } from '../../api/app';
import { insertIntegration } from '../../store/integrations/integrations';
import { startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const tenantName = () => `t-${randomUUID().slice(0, 8)}`;
const scripted = { provider: 'scripted', script: [{ text: 'hi' }] };
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

let engine: Engine;
let app: FastifyInstance;
/** what the API logged, to find the failed audit write in */
const apiLog: string[] = [];
/** every key secret issued in this file: none may reach the audit table */
const secrets: string[] = [];

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  const sink = new Writable({ write(chunk: Buffer, _enc, done) { apiLog.push(chunk.toString()); done(); } });
  app = await buildApp({
    db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger: pino({ level: 'info' }, sink),
    rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY,
  });
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
});

const as = (key: string) => (options: InjectOptions) =>
  app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const admin = as(ADMIN_KEY);

interface Row { tenant_id: string; principal_id: string; principal_name: string; action: string; target: string | null; address: string | null }
interface Event { id: string; tenantId: string; principalId: string; action: string; target: string | null; at: string }

async function rowsOf(tenantId: string): Promise<Row[]> {
  const { rows } = await engine.db.query<Row>(
    'SELECT tenant_id, principal_id, principal_name, action, target, address FROM audit_events WHERE tenant_id = $1 ORDER BY id', [tenantId],
  );
  return rows;
}

/** The events on one of these targets, or by one of these principals (other test files share the database and add events of their own). */
async function rowsAbout(about: { targets?: string[]; by?: string[] }): Promise<Row[]> {
  const { rows } = await engine.db.query<Row>(
    `SELECT tenant_id, principal_id, principal_name, action, target, address FROM audit_events
     WHERE target = ANY($1) OR principal_id = ANY($2) ORDER BY id`, [about.targets ?? [], about.by ?? []],
  );
  return rows;
}

async function newTenant(): Promise<{ id: string; name: string }> {
  const res = await admin({ method: 'POST', url: '/v1/tenants', payload: { name: tenantName() } });
  expect(res.statusCode).toBe(201);
  return res.json();
}

async function issue(by: string, payload: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await as(by)({ method: 'POST', url: '/v1/keys', payload });
  expect(res.statusCode).toBe(201);
  const issued = res.json();
  secrets.push(issued.key);
  return issued;
}

/** A tenant with a key that holds manage (and read, run) in it, issued by the operator. */
async function managedTenant(): Promise<{ tenant: { id: string; name: string }; manager: { id: string; key: string } }> {
  const tenant = await newTenant();
  const manager = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'manager', roles: ['read', 'run', 'manage'] });
  return { tenant, manager };
}

async function audit(key: string, query = ''): Promise<{ status: number; events: Event[]; nextCursor: string | null; body: string }> {
  const res = await as(key)({ method: 'GET', url: `/v1/audit${query}` });
  const body = res.json();
  return { status: res.statusCode, events: body.events ?? [], nextCursor: body.nextCursor ?? null, body: res.body };
}

describe('the audit log records acts', () => {
  test('creating a tenant, issuing and revoking a key, creating an agent: one record each, with who, what, target and address', async () => {
    const tenant = await newTenant();
    const manager = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'manager', roles: ['read', 'run', 'manage'] });
    const reader = await issue(manager.key, { name: 'reader', roles: ['read'] });
    expect((await as(manager.key)({ method: 'DELETE', url: `/v1/keys/${reader.id}` })).statusCode).toBe(204);
    const agent = await as(manager.key)({ method: 'POST', url: '/v1/agents', payload: { name: `a_${randomUUID().slice(0, 8)}`, model: scripted } });
    expect(agent.statusCode).toBe(201);
    const agentId = agent.json().id as string;
    expect(agentId).toMatch(/^agt_/);

    // The operator acted in the tenant default (no X-Tenant-Id); the manager in its own tenant.
    const operatorRows = (await rowsOf('ten_default')).filter((r) => r.target === tenant.id || r.target === manager.id);
    expect(operatorRows).toEqual([
      { tenant_id: 'ten_default', principal_id: 'operator', principal_name: 'admin key', action: 'POST /v1/tenants', target: tenant.id, address: '127.0.0.1' },
      { tenant_id: 'ten_default', principal_id: 'operator', principal_name: 'admin key', action: 'POST /v1/keys', target: manager.id, address: '127.0.0.1' },
    ]);
    const by = { tenant_id: tenant.id, principal_id: manager.id, principal_name: 'manager', address: '127.0.0.1' };
    expect(await rowsOf(tenant.id)).toEqual([
      { ...by, action: 'POST /v1/keys', target: reader.id },
      { ...by, action: 'DELETE /v1/keys/:id', target: reader.id },
      { ...by, action: 'POST /v1/agents', target: agentId },
    ]);
    expect(await rowsAbout({ targets: [tenant.id, manager.id, reader.id, agentId] })).toHaveLength(5);
  });

  test('never a secret: no issued key appears anywhere in the table', async () => {
    await managedTenant();
    expect(secrets.length).toBeGreaterThan(0);
    const { rows } = await engine.db.query<{ text: string }>("SELECT coalesce(string_agg(audit_events::text, ' '), '') AS text FROM audit_events");
    expect(rows[0].text).toContain('POST /v1/keys');
    for (const secret of secrets) expect(rows[0].text).not.toContain(secret);
  });

  test('reads, refusals and failures leave no record', async () => {
    const { tenant, manager } = await managedTenant();
    expect((await as(manager.key)({ method: 'GET', url: '/v1/keys' })).statusCode).toBe(200);
    expect((await as(manager.key)({ method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
    expect((await audit(manager.key)).status).toBe(200);
    expect((await admin({ method: 'GET', url: '/v1/audit' })).statusCode).toBe(200);
    expect((await admin({ method: 'GET', url: '/v1/tenants' })).statusCode).toBe(200);
    // refused (403: a role beyond its own), failed (404: no such key)
    expect((await as(manager.key)({ method: 'POST', url: '/v1/keys', payload: { name: 'x', roles: ['decide'] } })).statusCode).toBe(403);
    expect((await as(manager.key)({ method: 'DELETE', url: '/v1/keys/key_doesnotexist' })).statusCode).toBe(404);
    expect(await rowsAbout({ targets: ['key_doesnotexist'], by: [manager.id] })).toEqual([]);
    expect(await rowsOf(tenant.id)).toEqual([]);
    const { rows } = await engine.db.query("SELECT action FROM audit_events WHERE action LIKE 'GET %' OR action LIKE 'HEAD %'");
    expect(rows).toEqual([]);
  });

  test('a run-level act is not recorded, whoever does it (the run says who started it)', async () => {
    const agent = (await as(API_KEY)({ method: 'POST', url: '/v1/agents', payload: { name: `a_${randomUUID().slice(0, 8)}`, model: scripted } })).json();
    const byUser = await as(API_KEY)({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } });
    expect(byUser.statusCode).toBe(201);
    const byOperator = await admin({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.id } });
    expect(byOperator.statusCode).toBe(201);
    const threadRows = await rowsAbout({ targets: [byUser.json().id, byOperator.json().id] });
    expect(threadRows).toEqual([]);
  });

  test('a failed audit write is logged and does not fail the act already done', async () => {
    await engine.db.query(`CREATE FUNCTION audit_refuse() RETURNS trigger AS $$
      BEGIN RAISE EXCEPTION 'audit refused for the test'; END $$ LANGUAGE plpgsql`);
    await engine.db.query(`CREATE TRIGGER audit_refuse BEFORE INSERT ON audit_events FOR EACH ROW
      WHEN (NEW.principal_name = 'broken-audit') EXECUTE FUNCTION audit_refuse()`);
    try {
      const { tenant } = await managedTenant();
      const broken = await issue(ADMIN_KEY, { tenantId: tenant.id, name: 'broken-audit', roles: ['manage'] });
      const issued = await as(broken.key)({ method: 'POST', url: '/v1/keys', payload: { name: 'still-issued', roles: ['manage'] } });
      expect(issued.statusCode).toBe(201);
      secrets.push(issued.json().key);
      expect(await rowsAbout({ targets: [issued.json().id], by: [broken.id] })).toEqual([]);
      expect((await as(issued.json().key)({ method: 'GET', url: '/v1/audit' })).statusCode).toBe(200);
      const logged = apiLog.filter((line) => line.includes('the audit log did not record an act'));
      expect(logged).toHaveLength(1);
      expect(logged[0]).toContain('POST /v1/keys');
      expect(logged[0]).not.toContain(issued.json().key);
    } finally {
      await engine.db.query('DROP TRIGGER audit_refuse ON audit_events');
      await engine.db.query('DROP FUNCTION audit_refuse()');
    }
  });
});

describe('GET /v1/audit', () => {
  test("a tenant's manage reads its own tenant's events only; another tenant answers as an unknown one", async () => {
    const a = await managedTenant();
    const b = await managedTenant();
    const reader = await issue(a.manager.key, { name: 'r', roles: ['read'] });
    await issue(b.manager.key, { name: 'r', roles: ['read'] });
    const own = await audit(a.manager.key);
    expect(own.status).toBe(200);
    expect(own.events.map((e) => [e.tenantId, e.principalId, e.action, e.target])).toEqual([[a.tenant.id, a.manager.id, 'POST /v1/keys', reader.id]]);
    expect((await audit(a.manager.key, `?tenantId=${a.tenant.name}`)).events).toEqual(own.events);
    const other = await as(a.manager.key)({ method: 'GET', url: `/v1/audit?tenantId=${b.tenant.id}` });
    const unknown = await as(a.manager.key)({ method: 'GET', url: '/v1/audit?tenantId=ten_doesnotexist' });
    expect(other.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(other.json()).toEqual({ ...unknown.json(), detail: unknown.json().detail.replace('ten_doesnotexist', b.tenant.id) });
    // API_KEY is the tenant default's manage: it sees none of a's or b's events.
    const byApiKey = await audit(API_KEY, '?limit=500');
    expect(byApiKey.status).toBe(200);
    expect(byApiKey.events.every((e) => e.tenantId === 'ten_default')).toBe(true);
    // Without manage: 403.
    expect((await audit(reader.key)).status).toBe(403);
  });

  test("the operator reads every tenant's events, or one tenant's", async () => {
    const a = await managedTenant();
    const b = await managedTenant();
    const keyA = await issue(a.manager.key, { name: 'r', roles: ['read'] });
    const keyB = await issue(b.manager.key, { name: 'r', roles: ['read'] });
    const all: Event[] = [];
    for (let after: string | null = '0'; after !== null;) {
      const page = await audit(ADMIN_KEY, `?limit=500&after=${after}`);
      expect(page.status).toBe(200);
      all.push(...page.events);
      after = page.nextCursor;
    }
    expect(all.map((e) => e.target)).toEqual(expect.arrayContaining([keyA.id, keyB.id, a.tenant.id, b.tenant.id]));
    const onlyA = await audit(ADMIN_KEY, `?tenantId=${a.tenant.id}`);
    expect(onlyA.events.map((e) => e.target)).toEqual([keyA.id]);
    expect(onlyA.nextCursor).toBeNull();
  });

  test('pages with after: an event id (nextCursor) or an ISO time', async () => {
    const { tenant, manager } = await managedTenant();
    const issued = [];
    for (let i = 0; i < 5; i += 1) {
      issued.push(await issue(manager.key, { name: `k${i}`, roles: ['read'] }));
      await new Promise((resolve) => setTimeout(resolve, 5)); // each event in a millisecond of its own, for after=<time>
    }
    const seen: Event[] = [];
    const pages: number[] = [];
    let after: string | null = null;
    do {
      const page = await audit(manager.key, `?limit=2${after ? `&after=${after}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.events);
      pages.push(page.events.length);
      after = page.nextCursor;
    } while (after !== null);
    expect(pages).toEqual([2, 2, 1]);
    expect(seen.map((e) => e.target)).toEqual(issued.map((k) => k.id));
    expect(seen.every((e) => e.tenantId === tenant.id)).toBe(true);
    // A time: only the events after it.
    const later = await audit(manager.key, `?after=${encodeURIComponent(seen[2].at)}`);
    expect(later.events.map((e) => e.target)).toEqual(issued.slice(3).map((k) => k.id));
    expect((await audit(manager.key, `?after=${seen[4].id}`)).events).toEqual([]);
    for (const bad of ['yesterday', '0000-01-01', '2026-13-45', '99999999999999999999']) {
      expect((await audit(manager.key, `?after=${bad}`)).status).toBe(400);
    }
  });
});

describe('a decision', () => {
  test("approving a tool call records the run and the call as the target, never the decision's reason", async () => {
    await engine.startWorker();
    const fx = await insertIntegration(engine.db, {
      name: `fx-${randomUUID().slice(0, 8)}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: path.join(__dirname, '..', '..') },
    });
    const script = [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: 'done' }];
    const { threadId } = await engine.scriptedThread(script, { integrationIds: [fx.id] });
    const runId = await engine.start({ threadId, input: 'go' });
    const pending = async () => (await as(API_KEY)({ method: 'GET', url: `/v1/runs/${runId}` })).json().pendingApprovals.length > 0;
    await waitFor(pending, 60_000, 'a pending approval');
    const reason = `reason-${randomUUID()}`;
    const decided = await as(API_KEY)({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'approve', reason } });
    expect(decided.statusCode).toBe(200);
    const rows = (await rowsOf('ten_default')).filter((r) => r.target?.startsWith(runId));
    expect(rows).toEqual([{
      tenant_id: 'ten_default', principal_id: 'api_key', principal_name: 'API_KEY',
      action: 'POST /v1/runs/:id/approvals/:toolCallId', target: `${runId}/call_1_1`, address: '127.0.0.1',
    }]);
    const { rows: all } = await engine.db.query<{ text: string }>("SELECT string_agg(audit_events::text, ' ') AS text FROM audit_events");
    expect(all[0].text).not.toContain(reason);
    expect((await engine.result(runId)).status).toBe('completed');
  }, 120_000);
});
