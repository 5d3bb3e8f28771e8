import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import { bindAuthorizationState, saveAuthorizationState } from '../../store/integrations/oauth-states';
import { logger, startEngine, type Engine } from '../support/engine';

/*
 * Agents and integrations (and their OAuth authorizations) belong to a tenant: another tenant's,
 * by id or by name, answer exactly as unknown ones and are never changed; names are the tenant's own.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const ROLES = ['read', 'run', 'decide', 'manage'];
const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

let engine: Engine;
let app: FastifyInstance;

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  // No worker: capabilities and authorizations that reached one would wait for it this long.
  app = await buildApp({
    db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY,
    adminApiKey: ADMIN_KEY, capabilitiesWaitMs: 1_000,
  });
});
afterAll(async () => {
  await app?.close();
  await engine?.close();
});

type Send = (options: InjectOptions) => Promise<LightMyRequestResponse>;
const as = (key: string, headers: Record<string, string> = {}): Send => (options) =>
  app.inject({ ...options, headers: { ...options.headers, ...headers, authorization: `Bearer ${key}` } });
const admin = as(ADMIN_KEY);

interface Tenant { id: string; name: string; send: Send; operator: Send }

/** A tenant, a key issued by the operator with the roles a tenant's manager holds, and the operator acting in it. */
async function newTenant(): Promise<Tenant> {
  const created = await admin({ method: 'POST', url: '/v1/tenants', payload: { name: unique('t') } });
  expect(created.statusCode).toBe(201);
  const tenant = created.json() as { id: string; name: string };
  const issued = await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: 'manager', roles: ROLES } });
  expect(issued.statusCode).toBe(201);
  return { ...tenant, send: as(issued.json().key), operator: as(ADMIN_KEY, { 'x-tenant-id': tenant.id }) };
}

const model = { provider: 'scripted', script: [{ text: 'hi' }] };
const httpServer = (name: string) => ({ name, transport: { type: 'http', url: 'https://mcp.example.com/mcp', auth: { type: 'oauth' } } });

async function createAgent(t: Tenant, body: Record<string, unknown>): Promise<{ id: string; name: string; updatedAt: string }> {
  const res = await t.send({ method: 'POST', url: '/v1/agents', payload: { model, ...body } });
  expect(res.statusCode).toBe(201);
  return res.json();
}

async function createIntegration(t: Tenant, name: string): Promise<{ id: string; name: string; updatedAt: string }> {
  const res = await t.send({ method: 'POST', url: '/v1/integrations', payload: httpServer(name) });
  expect(res.statusCode).toBe(201);
  return res.json();
}

/** What an unknown ref answers at `path` (with `ref` in it), next to what `other` answers, both without the ref. */
async function expectAnswersAsUnknown(send: Send, method: InjectOptions['method'], path: (ref: string) => string, other: string,
  payload?: Record<string, unknown>): Promise<void> {
  const unknownRef = unique('nothing');
  const [theirs, none] = [await send({ method, url: path(other), payload }), await send({ method, url: path(unknownRef), payload })];
  expect({ status: theirs.statusCode, body: theirs.body.replaceAll(other, 'REF') })
    .toEqual({ status: none.statusCode, body: none.body.replaceAll(unknownRef, 'REF') });
  expect([403, 404]).toContain(theirs.statusCode);
}

describe("another tenant's agents", () => {
  test('by id or by name: read, changed, deleted, previewed or listed, they answer as unknown and stay as they were', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const agent = await createAgent(a, { name: unique('private') });
    for (const ref of [agent.id, agent.name]) {
      await expectAnswersAsUnknown(b.send, 'GET', (r) => `/v1/agents/${r}`, ref);
      await expectAnswersAsUnknown(b.send, 'PATCH', (r) => `/v1/agents/${r}`, ref, { description: 'taken over' });
      await expectAnswersAsUnknown(b.send, 'DELETE', (r) => `/v1/agents/${r}`, ref);
      await expectAnswersAsUnknown(b.send, 'GET', (r) => `/v1/agents/${r}/context`, ref);
      // The operator acting in tenant B sees only B's.
      await expectAnswersAsUnknown(b.operator, 'GET', (r) => `/v1/agents/${r}`, ref);
      await expectAnswersAsUnknown(b.operator, 'DELETE', (r) => `/v1/agents/${r}`, ref);
      const missing = await b.send({ method: 'GET', url: `/v1/agents/${ref}` });
      expect(missing.json()).toMatchObject({ status: 404, code: 'not_found', detail: `Agent ${ref} does not exist` });
    }
    const after = await a.send({ method: 'GET', url: `/v1/agents/${agent.id}` });
    expect(after.statusCode).toBe(200);
    expect(after.json()).toMatchObject({ id: agent.id, description: null, disabledAt: null, updatedAt: agent.updatedAt });
    const listedByB = (await b.send({ method: 'GET', url: '/v1/agents' })).json().agents as { id: string }[];
    expect(listedByB).toEqual([]);
    expect(((await a.send({ method: 'GET', url: '/v1/agents' })).json().agents as { id: string }[]).map((x) => x.id)).toEqual([agent.id]);
  });

  test("an agent's context is never previewed on another tenant's thread: the thread answers as unknown", async () => {
    const b = await newTenant();
    // API_KEY acts in the tenant default.
    const ofDefault = await as(API_KEY)({ method: 'POST', url: '/v1/agents', payload: { name: unique('agent'), model } });
    const thread = await as(API_KEY)({ method: 'POST', url: '/v1/threads', payload: { agentId: ofDefault.json().id } });
    expect(thread.statusCode).toBe(201);
    const own = await createAgent(b, { name: unique('own') });
    await expectAnswersAsUnknown(b.send, 'GET', (r) => `/v1/agents/${own.id}/context?threadId=${r}`, thread.json().id);
    const res = await b.send({ method: 'GET', url: `/v1/agents/${own.id}/context?threadId=${thread.json().id}` });
    expect(res.json()).toMatchObject({ status: 404, detail: `Thread ${thread.json().id} does not exist` });
  });

  test('the same name in two tenants is two agents; each tenant finds its own by that name', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const name = unique('shared');
    const [ofA, ofB] = [await createAgent(a, { name }), await createAgent(b, { name, description: 'B' })];
    expect(ofA.id).not.toBe(ofB.id);
    expect((await a.send({ method: 'GET', url: `/v1/agents/${name}` })).json()).toMatchObject({ id: ofA.id, description: null });
    expect((await b.send({ method: 'GET', url: `/v1/agents/${name}` })).json()).toMatchObject({ id: ofB.id, description: 'B' });
    // A rename into a name another tenant uses is no conflict either; one within the tenant still is.
    const other = await createAgent(b, { name: unique('other') });
    expect((await b.send({ method: 'PATCH', url: `/v1/agents/${other.id}`, payload: { name } })).statusCode).toBe(409);
    const deleted = await b.send({ method: 'DELETE', url: `/v1/agents/${name}` });
    expect(deleted.statusCode).toBe(204);
    expect((await a.send({ method: 'GET', url: `/v1/agents/${name}` })).json()).toMatchObject({ id: ofA.id });
  });

  test('an agent names only its own tenant\'s integrations and sub-agents: another tenant\'s are unknown', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const integration = await createIntegration(a, unique('tools'));
    const helper = await createAgent(a, { name: unique('helper') });
    for (const ref of [integration.id, integration.name]) {
      const res = await b.send({ method: 'POST', url: '/v1/agents', payload: { name: unique('thief'), model, integrationIds: [ref] } });
      expect(res.statusCode).toBe(400);
      expect(res.json().detail).toBe(`Unknown integrationIds: ${ref}`);
    }
    for (const ref of [helper.id, helper.name]) {
      const res = await b.send({ method: 'POST', url: '/v1/agents', payload: { name: unique('thief'), model, subAgents: [ref] } });
      expect(res.statusCode).toBe(400);
      expect(res.json().detail).toBe(`body.subAgents: unknown agents ${ref}`);
    }
    const own = await createAgent(b, { name: unique('own') });
    const patched = await b.send({ method: 'PATCH', url: `/v1/agents/${own.id}`, payload: { integrationIds: [integration.id] } });
    expect(patched.statusCode).toBe(400);
    expect((await b.send({ method: 'GET', url: `/v1/agents/${own.id}` })).json().integrationIds).toEqual([]);
    // A's own agent may use it, by name.
    expect((await createAgent(a, { name: unique('user'), integrationIds: [integration.name] }) as unknown as { integrationIds: string[] })
      .integrationIds).toEqual([integration.id]);
  });
});

describe("another tenant's integrations", () => {
  test('by id or by name: read, changed, deleted, listed, asked for capabilities or authorized, they answer as unknown', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const integration = await createIntegration(a, unique('private'));
    for (const ref of [integration.id, integration.name]) {
      await expectAnswersAsUnknown(b.send, 'GET', (r) => `/v1/integrations/${r}`, ref);
      await expectAnswersAsUnknown(b.send, 'PATCH', (r) => `/v1/integrations/${r}`, ref, { toolTimeoutMs: 10_000 });
      await expectAnswersAsUnknown(b.send, 'DELETE', (r) => `/v1/integrations/${r}`, ref);
      await expectAnswersAsUnknown(b.send, 'GET', (r) => `/v1/integrations/${r}/capabilities`, ref);
      // Authorizing is the operator's: B's key is refused alike; the operator acting in B finds nothing.
      await expectAnswersAsUnknown(b.send, 'POST', (r) => `/v1/integrations/${r}/authorize`, ref);
      await expectAnswersAsUnknown(b.operator, 'POST', (r) => `/v1/integrations/${r}/authorize`, ref);
      await expectAnswersAsUnknown(b.operator, 'DELETE', (r) => `/v1/integrations/${r}/authorization`, ref);
      await expectAnswersAsUnknown(b.operator, 'PATCH', (r) => `/v1/integrations/${r}`, ref, { name: unique('renamed') });
      await expectAnswersAsUnknown(b.operator, 'DELETE', (r) => `/v1/integrations/${r}`, ref);
      const missing = await b.operator({ method: 'POST', url: `/v1/integrations/${ref}/authorize` });
      expect(missing.json()).toMatchObject({ status: 404, code: 'not_found', detail: `Integration ${ref} does not exist` });
    }
    const after = await a.send({ method: 'GET', url: `/v1/integrations/${integration.id}` });
    expect(after.json()).toMatchObject({ id: integration.id, name: integration.name, updatedAt: integration.updatedAt });
    const { rows } = await engine.db.query('SELECT 1 FROM oauth_states WHERE integration_id = $1', [integration.id]);
    expect(rows).toEqual([]);
    expect((await b.send({ method: 'GET', url: '/v1/integrations' })).json().integrations).toEqual([]);
    const listedByA = (await a.send({ method: 'GET', url: '/v1/integrations' })).json().integrations as { id: string }[];
    expect(listedByA.map((i) => i.id)).toEqual([integration.id]);
  });

  test('the same name in two tenants is two integrations, by POST and by import; each tenant finds its own', async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const name = unique('shared');
    const ofA = await createIntegration(a, name);
    const imported = await b.send({
      method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [name]: { url: 'https://other.example.com/mcp' } } },
    });
    expect(imported.statusCode).toBe(201);
    const ofB = imported.json().integrations[0] as { id: string };
    expect(ofB.id).not.toBe(ofA.id);
    expect((await a.send({ method: 'GET', url: `/v1/integrations/${name}` })).json().id).toBe(ofA.id);
    expect((await b.send({ method: 'GET', url: `/v1/integrations/${name}` })).json()).toMatchObject({
      id: ofB.id, transport: { url: 'https://other.example.com/mcp' },
    });
    expect((await b.send({ method: 'POST', url: '/v1/integrations', payload: httpServer(name) })).statusCode).toBe(409);
    // An agent of each tenant, by that name, gets its own tenant's.
    const agentOfB = await b.send({ method: 'POST', url: '/v1/agents', payload: { name: unique('user'), model, integrationIds: [name] } });
    expect(agentOfB.json().integrationIds).toEqual([ofB.id]);
  });

  test('a tenant may not register a stdio server: the operator\'s rule stays', async () => {
    const b = await newTenant();
    const res = await b.send({
      method: 'POST', url: '/v1/integrations', payload: { name: unique('local'), transport: { type: 'stdio', command: 'node' } },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'admin_required' });
    expect((await b.operator({
      method: 'POST', url: '/v1/integrations', payload: { name: unique('local'), transport: { type: 'stdio', command: 'node' } },
    })).statusCode).toBe(201);
  });

  test("an authorization's callback stores tokens only for an integration of the tenant that started it, once", async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const integration = await createIntegration(a, unique('remote'));
    const callback = (state: string) => app.inject({ method: 'GET', url: `/oauth/callback?code=c&state=${encodeURIComponent(state)}` });
    const begin = async (startedBy?: { tenantId: string; principalId: string }) => {
      const state = randomUUID();
      const stateId = await saveAuthorizationState(engine.db, {
        integrationId: integration.id, state, codeVerifier: 'v', redirectUrl: 'http://127.0.0.1:9/oauth/callback',
        authorizationUrl: 'https://as.example.com/authorize',
      });
      if (startedBy) expect(await bindAuthorizationState(engine.db, stateId, startedBy)).toBe(true);
      return state;
    };
    // Bound to tenant B, the state cannot reach A's integration.
    const crossed = await callback(await begin({ tenantId: b.id, principalId: 'key_b' }));
    expect(crossed.statusCode).toBe(400);
    expect(crossed.body).toContain('The integration of this authorization no longer exists.');
    // A state nobody bound is unknown; either is used up by its one attempt.
    const unbound = await begin();
    const first = await callback(unbound);
    expect(first.statusCode).toBe(400);
    expect(first.body).toContain('This authorization is unknown');
    expect((await callback(unbound)).body).toContain('already used');
    const { rows } = await engine.db.query('SELECT 1 FROM integration_oauth WHERE id = $1 AND status = $2', [integration.id, 'authorized']);
    expect(rows).toEqual([]);
  });
});
