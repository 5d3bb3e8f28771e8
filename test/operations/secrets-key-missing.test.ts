import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { startApiServer, type ApiServer } from '../../api/server';
import { loadConfig } from '../../platform/config';
import { findIntegrationByName } from '../../store/integrations/integrations';
import { migrate } from '../../store/migrations';
import { openSecretStore } from '../../store/secrets/open-secret-store';
import { startEngine, type Engine } from '../support/engine';
import { ownDatabase } from '../support/own-database';

/*
 * The production topology's API started without SECRETS_KEY on an empty database, as
 * `npm run api` starts (migrate, open the secret store, serve): what needs the key says so.
 */

const database = ownDatabase('no_secrets_key');
const { url: dbUrl } = database;
const SECRET = `s3cret-${randomUUID()}`;
const suffix = () => randomUUID().slice(0, 8);

let engine: Engine;
let server: ApiServer;
const log: string[] = [];

beforeAll(async () => {
  await database.create();
  engine = await startEngine('external', { databaseUrl: dbUrl, worker: false });
  const logger = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _enc, done) { log.push(chunk.toString()); done(); } }));
  await migrate(engine.db);
  await openSecretStore(engine.db, loadConfig({ SECRETS_KEY: '' }).secretKeys, logger);
  server = await startApiServer(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', AGENTS_DIR: `/nonexistent-${suffix()}` }), { db: engine.db, client: engine.client, logger });
});
afterAll(async () => {
  await server?.close();
  await engine?.close();
  await database.drop();
});

function expectSecretsKeyMissing(res: LightMyRequestResponse): void {
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect([res.statusCode, res.json().code]).toEqual([503, 'secrets_key_missing']);
  expect(res.json().detail).toMatch(/SECRETS_KEY/);
  expect(res.body).not.toContain(SECRET);
}

describe('an API without SECRETS_KEY', () => {
  test('storing env or header values answers 503 secrets_key_missing naming SECRETS_KEY, and stores nothing', async () => {
    const inject = (method: 'POST' | 'PATCH', url: string, payload: Record<string, unknown>) => server.app.inject({ method, url, payload });
    const stdio = `env-${suffix()}`;
    expectSecretsKeyMissing(await inject('POST', '/v1/integrations', { name: stdio, transport: { type: 'stdio', command: 'node', env: { TOKEN: SECRET } } }));
    expect(await findIntegrationByName(engine.db, stdio)).toBeUndefined();
    const imported = `imp-${suffix()}`;
    expectSecretsKeyMissing(await inject('POST', '/v1/integrations/import', { mcpServers: { [imported]: { url: 'https://mcp.example.com/mcp', headers: { Authorization: `Bearer ${SECRET}` } } } }));
    expect(await findIntegrationByName(engine.db, imported)).toBeUndefined();

    // What holds no secret still works.
    const plain = await inject('POST', '/v1/integrations', { name: `plain-${suffix()}`, transport: { type: 'http', url: 'https://mcp.example.com/mcp' } });
    expect(plain.statusCode).toBe(201);
    expectSecretsKeyMissing(await inject('PATCH', `/v1/integrations/${plain.json().id}`, { transport: { headers: { Authorization: `Bearer ${SECRET}` } } }));
    expect((await findIntegrationByName(engine.db, plain.json().name))?.transport).toEqual({ type: 'http', url: 'https://mcp.example.com/mcp' });
  });

  test('/readyz and the start-up log say which features are off', async () => {
    const ready = await server.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.json().featuresOff).toEqual([expect.stringMatching(/^SECRETS_KEY is not set: .*env or header values.*OAuth/)]);
    const warning = log.map((line) => JSON.parse(line) as { msg: string; featuresOff?: string[] }).find((l) => l.featuresOff);
    expect(warning?.featuresOff).toEqual(ready.json().featuresOff);
    expect(warning?.msg).toMatch(/SECRETS_KEY is not set/);
  });
});
