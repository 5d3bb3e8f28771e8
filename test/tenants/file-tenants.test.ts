import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { startApiServer, type ApiServer } from '../../api/server';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { migrate } from '../../store/migrations';
import { insertTenant } from '../../store/tenants';
import { ConfigError, loadConfig } from '../../platform/config';
import { loadIntegrationsFile } from '../../use-cases/integrations/integrations-file';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { ownDatabase } from '../support/own-database';

/*
 * The operator's files name the tenants their agents and integrations serve (`tenants`: names, or
 * "*" for every tenant, those created later too; `default` when they say nothing). Each served
 * tenant gets its own row, its name reserved there and free elsewhere. A database of this file's
 * own: "*" reaches every tenant, and other test files' tenants must not see these agents.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const ROLES = ['read', 'run', 'decide', 'manage'];
const database = ownDatabase('file_tenants_test');
const { url: dbUrl } = database;

const scripted = { provider: 'scripted', script: [{ text: 'hi' }] };
const agentFile = (config: Record<string, unknown>) => `<config>${JSON.stringify({ model: scripted, ...config })}</config>\n<system>Operator's.</system>\n`;
const server = (url: string, tenants?: unknown) => ({ url, ...(tenants === undefined ? {} : { tenants }) });

let engine: Engine;
let api: ApiServer;
let dir: string;
let agentsDir: string;
let integrationsFile: string;
let acmeId: string;
let betaId: string;

beforeAll(async () => {
  await database.create();
  engine = await startEngine('external', { databaseUrl: dbUrl, worker: false });
  await migrate(engine.db);
  // Before the API starts: the first sync finds them. `later` and `future` are created through the API.
  acmeId = (await insertTenant(engine.db, 'acme'))!.id;
  betaId = (await insertTenant(engine.db, 'beta'))!.id;
  dir = path.join(testStack().tmpDir, `file-tenants-${randomUUID().slice(0, 8)}`);
  agentsDir = path.join(dir, 'agents');
  await mkdir(agentsDir, { recursive: true });
  integrationsFile = path.join(dir, 'mcp.json');
  await writeFile(integrationsFile, JSON.stringify({
    mcpServers: { gh: server('https://gh.example/mcp', ['acme']), shared: server('https://shared.example/mcp', '*') },
  }));
  const files: Record<string, Record<string, unknown>> = {
    'acme-only': { tenants: ['acme'], integrations: ['gh'] },
    everyone: { tenants: '*', integrations: ['shared'], subAgents: ['helper'] },
    helper: { tenants: '*' },
    plain: {},
    'needs-gh': { tenants: ['default', 'acme'], integrations: ['gh'] },
    pending: { tenants: ['future'] },
    'bad-string': { tenants: 'acme' },
    'bad-name': { tenants: ['Acme!'] },
    'bad-huge': { tenants: Array.from({ length: 1001 }, (_, i) => `t${i}`) },
  };
  for (const [name, config] of Object.entries(files)) await writeFile(path.join(agentsDir, `${name}.chatmd`), agentFile(config));
  const config = loadConfig({
    PORT: '0', LOG_LEVEL: 'silent', API_KEY, ADMIN_API_KEY: ADMIN_KEY, INTEGRATIONS_FILE: integrationsFile, AGENTS_DIR: agentsDir,
    RATE_LIMIT_PER_MINUTE: '0',
  });
  api = await startApiServer(config, { db: engine.db, client: engine.client, logger });
});
afterAll(async () => {
  await api?.close();
  await engine?.close();
  await database.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Send = (options: InjectOptions) => Promise<LightMyRequestResponse>;
const as = (key: string, headers: Record<string, string> = {}): Send => (options) =>
  api.app.inject({ ...options, headers: { ...options.headers, ...headers, authorization: `Bearer ${key}` } });
const operator = as(ADMIN_KEY);
const defaultUser = as(API_KEY);
/** The operator acting in the tenant. */
const operatorIn = (tenantId: string) => as(ADMIN_KEY, { 'x-tenant-id': tenantId });

/** A manager of the tenant (a key the operator issued). */
async function managerOf(tenantId: string): Promise<Send> {
  const issued = await operator({ method: 'POST', url: '/v1/keys', payload: { tenantId, name: 'manager', roles: ROLES } });
  expect(issued.statusCode).toBe(201);
  return as(issued.json().key);
}

async function agentsOf(send: Send): Promise<Map<string, { id: string; integrationIds: string[]; subAgentIds?: string[] }>> {
  const res = await send({ method: 'GET', url: '/v1/agents' });
  expect(res.statusCode).toBe(200);
  return new Map((res.json().agents as { name: string; id: string; integrationIds: string[] }[]).map((a) => [a.name, a]));
}

async function integrationIdOf(send: Send, name: string): Promise<string | undefined> {
  const res = await send({ method: 'GET', url: `/v1/integrations/${name}` });
  return res.statusCode === 200 ? res.json().id : undefined;
}

describe("the tenants the operator's files serve", () => {
  test('a file that lists acme defines its agent in acme alone, with acme\'s integration of the name it lists', async () => {
    const [acme, beta] = [await managerOf(acmeId), await managerOf(betaId)];
    const inAcme = await agentsOf(acme);
    const gh = await integrationIdOf(acme, 'gh');
    expect(gh).toBeDefined();
    expect(inAcme.get('acme-only')?.integrationIds).toEqual([gh]);
    expect((await agentsOf(defaultUser)).has('acme-only')).toBe(false);
    expect((await agentsOf(beta)).has('acme-only')).toBe(false);
    // The integrations file's `tenants` too: gh is acme's alone.
    expect(await integrationIdOf(defaultUser, 'gh')).toBeUndefined();
    expect(await integrationIdOf(beta, 'gh')).toBeUndefined();
    // A file without `tenants` serves default.
    expect((await agentsOf(defaultUser)).has('plain')).toBe(true);
    expect(inAcme.has('plain')).toBe(false);
  });

  test('an agent that names an integration its tenant lacks is refused there and stored in the tenants that have it', async () => {
    const report = await syncAgentFiles(engine.db, agentsDir);
    const file = path.join(agentsDir, 'needs-gh.chatmd');
    expect(report.errors.map((e) => e.message)).toContain(`${file}:1: unknown integration(s): gh`);
    expect((await agentsOf(await managerOf(acmeId))).get('needs-gh')?.integrationIds).toEqual([await integrationIdOf(operatorIn(acmeId), 'gh')]);
    expect((await agentsOf(defaultUser)).has('needs-gh')).toBe(false);
  });

  test('"*": every tenant has its own row, sub-agents and integrations resolved in that tenant, and a tenant created later gets them at once', async () => {
    const created = await operator({ method: 'POST', url: '/v1/tenants', payload: { name: 'later' } });
    expect(created.statusCode).toBe(201);
    const laterId = created.json().id as string;
    const senders = [defaultUser, await managerOf(acmeId), await managerOf(betaId), await managerOf(laterId)];
    const ids = new Set<string>();
    for (const send of senders) {
      const agents = await agentsOf(send);
      const everyone = agents.get('everyone');
      expect(everyone).toBeDefined();
      ids.add(everyone!.id);
      expect(everyone!.integrationIds).toEqual([await integrationIdOf(send, 'shared')]);
      const detail = (await send({ method: 'GET', url: `/v1/agents/${everyone!.id}` })).json();
      expect(detail.subAgents).toEqual([agents.get('helper')!.id]);
    }
    expect(ids.size).toBe(senders.length);
  });

  test('a listed tenant that does not exist yet waits: the agent appears once the operator creates it', async () => {
    expect((await syncAgentFiles(engine.db, agentsDir)).waiting).toContainEqual(expect.stringMatching(/pending\.chatmd: tenant\(s\) future do not exist yet/));
    const created = await operator({ method: 'POST', url: '/v1/tenants', payload: { name: 'future' } });
    expect(created.statusCode).toBe(201);
    expect((await agentsOf(await managerOf(created.json().id))).has('pending')).toBe(true);
    expect((await agentsOf(defaultUser)).has('pending')).toBe(false);
  });

  test('the names are reserved in the tenants served (the operator is refused as a duplicate), free in the others', async () => {
    const [acme, beta] = [await managerOf(acmeId), await managerOf(betaId)];
    const agent = { name: 'acme-only', model: scripted };
    const integration = { name: 'gh', transport: { type: 'http', url: 'https://user.example/mcp' } };
    for (const [url, payload] of [['/v1/agents', agent], ['/v1/integrations', integration]] as const) {
      const refused = await acme({ method: 'POST', url, payload });
      expect([refused.statusCode, refused.json().code]).toEqual([403, 'admin_required']);
      expect((await operatorIn(acmeId)({ method: 'POST', url, payload })).statusCode).toBe(409);
      expect((await beta({ method: 'POST', url, payload })).statusCode).toBe(201);
    }
    // "*" reserves the names in every tenant.
    expect((await beta({ method: 'POST', url: '/v1/agents', payload: { name: 'everyone', model: scripted } })).statusCode).toBe(403);
  });

  test('taking a tenant off the list removes its agent there; a tenant whose name the API took keeps its own agent', async () => {
    const file = path.join(agentsDir, 'acme-only.chatmd');
    // beta's manager created an agent named acme-only in the test before: it stays beta's.
    const betaOwn = (await agentsOf(await managerOf(betaId))).get('acme-only');
    expect(betaOwn).toBeDefined();
    await writeFile(file, agentFile({ tenants: ['beta'] }));
    const report = await syncAgentFiles(engine.db, agentsDir);
    expect(report.errors.map((e) => e.message))
      .toContain(`${file}:1: an agent named "acme-only" is already defined in tenant beta through the API; this file is skipped there`);
    expect((await agentsOf(await managerOf(acmeId))).has('acme-only')).toBe(false);
    expect((await agentsOf(await managerOf(betaId))).get('acme-only')?.id).toBe(betaOwn!.id);
  });

  test('odd tenants are a clear error for their file alone; the other files are synced all the same', async () => {
    const report = await syncAgentFiles(engine.db, agentsDir);
    const errorOf = (name: string) => report.errors.find((e) => e.file === path.join(agentsDir, `${name}.chatmd`))?.message;
    expect(errorOf('bad-string')).toMatch(/tenants: must be a list of tenant names or "\*" for every tenant, found "acme"/);
    expect(errorOf('bad-name')).toMatch(/tenants: "Acme!": not a tenant name/);
    expect(errorOf('bad-huge')).toMatch(/tenants: lists 1001 tenants; at most 1000/);
    expect([...report.changed, ...report.unchanged]).toEqual(expect.arrayContaining(['everyone', 'acme/everyone', 'plain']));
    for (const name of ['bad-string', 'bad-name', 'bad-huge']) expect((await agentsOf(defaultUser)).has(name)).toBe(false);
  });

  test('INTEGRATIONS_FILE: odd tenants stop the load naming the entry; `tenants` is the file\'s own, the import API refuses it', async () => {
    const bad = path.join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ mcpServers: { x: server('https://x.example/mcp', 'acme'), y: server('https://y.example/mcp', ['NO']) } }));
    const err = await loadIntegrationsFile({ db: engine.db, file: bad, env: {}, logger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/mcpServers\.x\.tenants: must be a list of tenant names.*mcpServers\.y\.tenants: "NO": not a tenant name/);
    const imported = await operator({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { z: server('https://z.example/mcp', ['acme']) } } });
    expect(imported.statusCode).toBe(400);
    expect(imported.body).toContain('tenants');
  });
});
