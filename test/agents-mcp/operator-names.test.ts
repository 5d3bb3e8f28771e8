import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { startApiServer, type ApiServer } from '../../api/server';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { findAgentByRef } from '../../store/agents';
import { findIntegrationByName } from '../../store/integrations/integrations';
import { loadConfig } from '../../platform/config';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';

/*
 * The names an operator's files refer to (the integrations INTEGRATIONS_FILE defines and agent
 * files list, the agents agent files define) are the operator's to give or take: otherwise a user
 * renames the operator's integration, creates one of theirs under its name, and the next sync
 * points the operator's agent at the user's server.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const suffix = () => randomUUID().slice(0, 8);
const scripted = { provider: 'scripted', script: [{ text: 'hi' }] };
const userServer = { type: 'http', url: 'https://user.example/mcp' };

let engine: Engine;
let server: ApiServer;
let dir: string;
let agentsDir: string;
// Names of this run: the database is shared with other test files.
const opsrv = `opsrv-${suffix()}`;
const later = `later-${suffix()}`;
const spare = `spare-${suffix()}`;
const opsAgent = `ops-${suffix()}`;
const pendingAgent = `pending-${suffix()}`;
const brokenAgent = `broken-${suffix()}`;

const agentFile = (integrations: string[]) => `<config>${JSON.stringify({ model: scripted, integrations })}</config>\n<system>Operator's agent.</system>\n`;

beforeAll(async () => {
  engine = await startEngine('embedded', { worker: false });
  dir = path.join(testStack().tmpDir, `operator-names-${suffix()}`);
  agentsDir = path.join(dir, 'agents');
  await mkdir(agentsDir, { recursive: true });
  const integrationsFile = path.join(dir, 'mcp.json');
  await writeFile(integrationsFile, JSON.stringify({ mcpServers: { [opsrv]: { url: 'https://ops.example/mcp' }, [spare]: { url: 'https://spare.example/mcp' } } }));
  await writeFile(path.join(agentsDir, `${opsAgent}.chatmd`), agentFile([opsrv]));
  // Names an integration that does not exist yet: the file waits for the operator to create it.
  await writeFile(path.join(agentsDir, `${pendingAgent}.chatmd`), agentFile([later]));
  await writeFile(path.join(agentsDir, `${brokenAgent}.chatmd`), '<sytem>not yet right</sytem>\n');
  const config = loadConfig({
    PORT: '0', LOG_LEVEL: 'silent', API_KEY, ADMIN_API_KEY: ADMIN_KEY, INTEGRATIONS_FILE: integrationsFile, AGENTS_DIR: agentsDir, RATE_LIMIT_PER_MINUTE: '0',
  });
  server = await startApiServer(config, { db: engine.db, client: engine.client, logger });
});
afterAll(async () => {
  await server?.close();
  await engine?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const as = (key: string) => (options: InjectOptions) => server.app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
const user = as(API_KEY);
const admin = as(ADMIN_KEY);

function expectAdminRequired(res: LightMyRequestResponse, field: RegExp): void {
  expect([res.statusCode, res.json().code]).toEqual([403, 'admin_required']);
  expect(res.json().field).toMatch(field);
}

const fileAgentIntegrations = async (name: string) => (await findAgentByRef(engine.db, name))?.integrationIds;

describe('names the operator\'s files refer to', () => {
  test('a user cannot rename the integration an agent file names, nor take its name: the next sync keeps the operator\'s server', async () => {
    const operators = await findIntegrationByName(engine.db, opsrv);
    expect(await fileAgentIntegrations(opsAgent)).toEqual([operators!.id]);

    expectAdminRequired(await user({ method: 'PATCH', url: `/v1/integrations/${opsrv}`, payload: { name: `moved-${suffix()}` } }), /^body\.name/);
    expectAdminRequired(await user({ method: 'DELETE', url: `/v1/integrations/${spare}` }), /spare-/);
    expectAdminRequired(await user({ method: 'POST', url: '/v1/integrations', payload: { name: later, transport: userServer } }), /^body\.name/);
    expectAdminRequired(await user({ method: 'POST', url: '/v1/integrations/import', payload: { mcpServers: { [later]: { url: userServer.url } } } }), new RegExp(later));
    expect(await findIntegrationByName(engine.db, later)).toBeUndefined();
    expect(await findIntegrationByName(engine.db, spare)).toBeDefined();

    await syncAgentFiles(engine.db, agentsDir);
    expect(await fileAgentIntegrations(opsAgent)).toEqual([operators!.id]);
    expect(await findAgentByRef(engine.db, pendingAgent)).toBeUndefined();
  });

  test('renaming any integration is the operator\'s act; names no file refers to stay the user\'s to take', async () => {
    const created = await user({ method: 'POST', url: '/v1/integrations', payload: { name: `mine-${suffix()}`, transport: userServer } });
    expect(created.statusCode).toBe(201);
    expectAdminRequired(await user({ method: 'PATCH', url: `/v1/integrations/${created.json().id}`, payload: { name: `other-${suffix()}` } }), /^body\.name/);
    // Its own name again is no rename.
    expect((await user({ method: 'PATCH', url: `/v1/integrations/${created.json().id}`, payload: { name: created.json().name, toolTimeoutMs: 5000 } })).statusCode).toBe(200);
    expect((await admin({ method: 'PATCH', url: `/v1/integrations/${created.json().id}`, payload: { name: `other-${suffix()}` } })).statusCode).toBe(200);
    expect((await user({ method: 'DELETE', url: `/v1/integrations/${created.json().id}` })).statusCode).toBe(204);
  });

  test('the agent names agent files define are the operator\'s: creating one, or renaming an agent to one, needs the admin key', async () => {
    expectAdminRequired(await user({ method: 'POST', url: '/v1/agents', payload: { name: brokenAgent, model: scripted } }), /^body\.name/);
    const mine = await user({ method: 'POST', url: '/v1/agents', payload: { name: `mine-${suffix()}`, model: scripted } });
    expect(mine.statusCode).toBe(201);
    expectAdminRequired(await user({ method: 'PATCH', url: `/v1/agents/${mine.json().id}`, payload: { name: brokenAgent } }), /^body\.name/);
    expect((await user({ method: 'PATCH', url: `/v1/agents/${mine.json().id}`, payload: { name: `still-mine-${suffix()}` } })).statusCode).toBe(200);
  });

  test('the admin key may give the names out', async () => {
    const created = await admin({ method: 'POST', url: '/v1/integrations', payload: { name: later, transport: { type: 'http', url: 'https://later.example/mcp' } } });
    expect(created.statusCode).toBe(201);
    await syncAgentFiles(engine.db, agentsDir);
    expect(await fileAgentIntegrations(pendingAgent)).toEqual([created.json().id]);
    expect((await admin({ method: 'DELETE', url: `/v1/integrations/${spare}` })).statusCode).toBe(204);
  });
});
