import { randomUUID } from 'node:crypto';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { migrate } from '../../store/migrations';
import { insertThread } from '../../store/threads/threads';
import { readAuthorizationState, saveAuthorizationState } from '../../store/integrations/oauth-states';
import { beginAuthorization, completeAuthorization } from '../../mcp-client/oauth/oauth-provider';
import { installSecretKeys } from '../../platform/secrets/key-ring';
import { openSecretStore } from '../../store/secrets/open-secret-store';
import { rotateSecrets } from '../../store/secrets/rotate-secrets';
import { keyRing, newSecretKey } from '../../platform/secrets/secret-box';
import { defaultFetch } from '../../mcp-client/connections/connect';
import { logger, startEngine, type Engine } from '../support/engine';
import { approveInBrowser, startOAuthProtectedServer, type OAuthProtectedServer } from '../fixtures/oauth-protected-server';
import { oauthRecords } from '../../store/integrations/oauth';
import { ownDatabase } from '../support/own-database';

const [K1, K2] = [newSecretKey(), newSecretKey()];
const idOf = (key: Buffer) => keyRing(key).current!.id;

/** A database of this file's own: a rotation rewrites every sealed row, and other test files must not see that. */
const database = ownDatabase('oauth_secrets');
const { url: dbUrl } = database;

describe('OAuth secrets at rest', () => {
  let engine: Engine;
  let server: OAuthProtectedServer;

  beforeAll(async () => {
    await database.create();
    server = await startOAuthProtectedServer();
    engine = await startEngine('external', { databaseUrl: dbUrl, worker: false });
    await migrate(engine.db);
    installSecretKeys(keyRing(K1));
    await engine.startWorker();
  });
  afterAll(async () => {
    await engine?.close();
    await server?.close();
    await database.drop();
  });

  const kids = async () => (await engine.db.query<{ kid: string }>(
    `SELECT sealed->>'kid' AS kid FROM integration_oauth UNION ALL SELECT sealed->>'kid' FROM oauth_states ORDER BY 1`)).rows.map((r) => r.kid);

  test('tokens and authorizations in progress are rotated with the other secrets; a process without their key refuses to start', async () => {
    const integration = await insertIntegration(engine.db, {
      name: `oauth-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: server.url, auth: { type: 'oauth' } },
    });
    // The operator's steps as the worker's activities take them, with a headless browser between.
    const redirectUrl = 'http://127.0.0.1:9/oauth/callback';
    const begun = await beginAuthorization(oauthRecords(engine.db), integration, redirectUrl, defaultFetch);
    await saveAuthorizationState(engine.db, {
      integrationId: integration.id, state: begun.state, codeVerifier: begun.codeVerifier, redirectUrl, authorizationUrl: begun.authorizationUrl,
    });
    const answer = new URL(await approveInBrowser(begun.authorizationUrl)).searchParams;
    const [code, iss] = [answer.get('code')!, answer.get('iss') ?? undefined];
    await completeAuthorization(oauthRecords(engine.db), integration, { code, iss, codeVerifier: begun.codeVerifier, redirectUrl }, defaultFetch);
    expect(await kids()).toEqual([idOf(K1), idOf(K1)]);

    // A process with another key only refuses, naming the table.
    await expect(openSecretStore(engine.db, { current: K2 }, logger)).rejects.toThrow(/integration_oauth sealed with key/);
    installSecretKeys(keyRing(K1));

    const report = await rotateSecrets(engine.db, keyRing(K2, K1));
    expect(report.remaining).toBe(0);
    expect(await kids()).toEqual([idOf(K2), idOf(K2)]);
    installSecretKeys(keyRing(K2));
    const stateId = (await engine.db.query<{ id: string }>('SELECT id FROM oauth_states WHERE integration_id = $1', [integration.id])).rows[0].id;
    expect((await readAuthorizationState(engine.db, stateId))?.codeVerifier).toBe(begun.codeVerifier);

    // With only the new key, a worker still calls the server with the rotated tokens.
    await engine.stopWorker();
    await engine.startWorker();
    const script: ScriptStep[] = [{ toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'rotated' } }] }, { text: '{{tool_results}}' }];
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [integration.id] });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: 'echo: rotated' });
  }, 120_000);
});
