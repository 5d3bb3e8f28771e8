import { randomUUID } from 'node:crypto';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { findIntegration } from '../../store/integrations/integrations';
import { createPool } from '../../store/pool';
import { insertThread } from '../../store/threads/threads';
import { defaultFetch } from '../../mcp-client/connections/connect';
import { authorizedFetch } from '../../mcp-client/oauth/oauth-fetch';
import { withCliEngine } from '../support/cli';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { approveInBrowser, startOAuthProtectedServer, type OAuthProtectedServer, type TokenOutage } from '../fixtures/oauth-protected-server';
import { oauthRecords } from '../../store/integrations/oauth';

const suffix = () => randomUUID().slice(0, 8);
const NEEDS = (name: string) => `MCP tool execution failed: integration ${name} needs authorization; an operator must authorize it`;

interface IntegrationBody {
  id: string; name: string; authorization: string; expiresAt?: string; scopes?: string[]; authorizedAt?: string;
  transport: { auth?: Record<string, unknown> };
}

/**
 * OAuth for remote MCP servers against a real protected server (the SDK's auth router and bearer
 * middleware, test/fixtures/oauth-protected-server.ts): the engine discovers, registers, sends a
 * person to authorize, exchanges the code at its callback, uses and refreshes the tokens, and
 * tells the LLM when an operator must authorize again. The worker has its own pool, as a separate
 * process would.
 */
describe('OAuth-protected MCP servers', () => {
  const h = withCliEngine({ engine: { workerDatabaseUrl: testStack().databases.embedded } });
  let server: OAuthProtectedServer;
  /** every response body the API gave, to check that no token ever left */
  const bodies: string[] = [];

  beforeAll(async () => {
    server = await startOAuthProtectedServer({ accessTtlSeconds: 3600 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const request = async <T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => {
    const res = await h.app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
    bodies.push(res.body);
    return { status: res.statusCode, body: (String(res.headers['content-type'] ?? '').includes('json') ? res.json() : res.body) as T, text: res.body };
  };

  async function integration(auth?: Record<string, unknown>): Promise<IntegrationBody> {
    const res = await request<IntegrationBody>('POST', '/v1/integrations', {
      name: `oauth-${suffix()}`, transport: { type: 'http', url: server.url, ...(auth ? { auth } : {}) },
    });
    expect(res.status).toBe(201);
    return res.body;
  }

  /** What an operator does: POST …/authorize, open the URL, let the browser follow the redirect back. */
  async function authorize(id: string): Promise<{ callback: string; page: { status: number; text: string } }> {
    const begun = await request<{ authorizationUrl: string; redirectUrl: string }>('POST', `/v1/integrations/${id}/authorize`);
    expect(begun.status).toBe(200);
    expect(begun.body.authorizationUrl.startsWith(server.issuerUrl)).toBe(true);
    const callback = await approveInBrowser(begun.body.authorizationUrl);
    expect(callback.startsWith(begun.body.redirectUrl)).toBe(true);
    const url = new URL(callback);
    const page = await request('GET', `${url.pathname}${url.search}`);
    return { callback: `${url.pathname}${url.search}`, page: { status: page.status, text: page.text } };
  }

  async function runTool(integrationId: string, integrationName: string, tool: string, args: Record<string, unknown> = {}) {
    const script: ScriptStep[] = [{ toolCalls: [{ name: `${integrationName}__${tool}`, arguments: args }] }, { text: '{{tool_results}}' }];
    const agent = await insertAgent(h.engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [integrationId] });
    const thread = await insertThread(h.engine.db, agent.id);
    const started = await request<{ id: string }>('POST', `/v1/threads/${thread.id}/runs`, { input: 'go' });
    expect(started.status).toBe(202);
    for (;;) {
      const run = (await request<{ status: string; output: string | null }>('GET', `/v1/runs/${started.body.id}?waitMs=30000`)).body;
      if (run.status !== 'running') return run;
    }
  }

  const view = async (id: string) => (await request<IntegrationBody>('GET', `/v1/integrations/${id}`)).body;

  test('a server that answers 401 with resource metadata is marked as needing authorization', async () => {
    const plain = await integration();
    expect(plain.authorization).toBe('not_required');
    const caps = await request<{ code: string; authorization: string }>('GET', `/v1/integrations/${plain.id}/capabilities`);
    expect(caps.status).toBe(409);
    expect(caps.body).toMatchObject({ code: 'authorization_required', authorization: 'required' });
    expect((await view(plain.id)).authorization).toBe('required');
    // A run goes on without it: the LLM is told why.
    const run = await runTool(plain.id, plain.name, 'echo', { text: 'hi' });
    expect(run.status).toBe('completed');
  }, 120_000);

  test("a tenant's manage authorizes its own tenant's integration, bound to its tenant; a read key may not", async () => {
    const tenant = (await request<{ id: string }>('POST', '/v1/tenants', { name: `oauth-${suffix()}` })).body;
    const issue = async (roles: string[]) =>
      (await request<{ key: string }>('POST', '/v1/keys', { tenantId: tenant.id, name: `k-${roles.join('-')}`, roles })).body.key;
    const [manager, reader] = [await issue(['read', 'manage']), await issue(['read'])];
    const send = (key: string, method: 'GET' | 'POST', url: string) => h.app.inject({ method, url, headers: { authorization: `Bearer ${key}` } });
    // A private address is the operator's to register; authorizing it is then the tenant's manager's.
    const created = await h.app.inject({
      method: 'POST', url: '/v1/integrations', headers: { 'x-tenant-id': tenant.id },
      payload: { name: `oauth-${suffix()}`, transport: { type: 'http', url: server.url } },
    });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ id: string }>().id;
    expect((await send(reader, 'POST', `/v1/integrations/${id}/authorize`)).json()).toMatchObject({ status: 403, code: 'forbidden', role: 'manage' });

    const begun = await send(manager, 'POST', `/v1/integrations/${id}/authorize`);
    expect(begun.statusCode).toBe(200);
    const callback = new URL(await approveInBrowser(begun.json<{ authorizationUrl: string }>().authorizationUrl));
    expect((await request('GET', `${callback.pathname}${callback.search}`)).status).toBe(200);
    expect((await send(manager, 'GET', `/v1/integrations/${id}`)).json()).toMatchObject({ authorization: 'authorized' });
    // The default tenant's view of the engine has no such integration.
    expect((await request('GET', `/v1/integrations/${id}`)).status).toBe(404);
  });

  test('a redirect that names another issuer (RFC 9207 mix-up) is refused before the code is exchanged', async () => {
    const created = await integration({ type: 'oauth' });
    const begun = await request<{ authorizationUrl: string }>('POST', `/v1/integrations/${created.id}/authorize`);
    const url = new URL(await approveInBrowser(begun.body.authorizationUrl));
    expect(url.searchParams.get('iss')).toBe(server.issuerUrl);
    url.searchParams.set('iss', 'https://attacker.example/');
    const before = server.stats.codeExchanges;
    const page = await request('GET', `${url.pathname}${url.search}`);
    expect(page.status).toBe(502);
    expect(page.text).toContain('Issuer mismatch');
    expect(server.stats.codeExchanges).toBe(before);
    expect((await view(created.id)).authorization).toBe('required');
  }, 120_000);

  test('authorize, callback, call a tool; the state works once', async () => {
    const before = { ...server.stats };
    const created = await integration({ type: 'oauth', scopes: ['mcp:tools'] });
    expect(created.authorization).toBe('required');
    expect(created.transport.auth).toMatchObject({ type: 'oauth', scopes: ['mcp:tools'], clientSecretSet: false });

    const { callback, page } = await authorize(created.id);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`Integration ${created.name} is authorized`);
    expect(server.stats.registrations).toBe(before.registrations + 1);
    expect(server.stats.codeExchanges).toBe(before.codeExchanges + 1);

    const shown = await view(created.id);
    expect(shown.authorization).toBe('authorized');
    expect(shown.scopes).toEqual(['mcp:tools']);
    expect(Date.parse(shown.expiresAt!)).toBeGreaterThan(Date.now() + 3_000_000);

    const caps = await request<{ authorization: string; tools: { name: string }[] }>('GET', `/v1/integrations/${created.id}/capabilities`);
    expect(caps.status).toBe(200);
    expect(caps.body.authorization).toBe('authorized');
    expect(caps.body.tools.map((t) => t.name).sort()).toEqual(['echo', 'whoami']);

    const run = await runTool(created.id, created.name, 'echo', { text: 'through oauth' });
    expect(run).toMatchObject({ status: 'completed', output: 'echo: through oauth' });

    // The same redirect again (a replay, a reload): refused, and nothing changes.
    const replay = await request('GET', callback);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('already used');
    expect(server.stats.codeExchanges).toBe(before.codeExchanges + 1);
  }, 120_000);

  test("the helper workflows' histories hold neither the state nor the authorization code", async () => {
    const created = await integration({ type: 'oauth' });
    const { callback, page } = await authorize(created.id);
    expect(page.status).toBe(200);
    const params = new URL(callback, 'http://x').searchParams;
    const secrets = [params.get('state')!, params.get('code')!];
    expect(secrets.every((s) => s.length >= 16)).toBe(true);

    const ids: string[] = [];
    await waitFor(async () => {
      ids.length = 0;
      const query = "WorkflowType = 'authorizeIntegrationWorkflow' OR WorkflowType = 'completeAuthorizationWorkflow'";
      for await (const w of h.engine.client.workflow.list({ query })) if (w.workflowId.includes(created.id)) ids.push(w.workflowId);
      return ids.length === 2;
    }, 30_000, 'both helper workflows listed');
    for (const id of ids) {
      const history = await h.engine.client.workflow.getHandle(id).fetchHistory();
      const texts: string[] = [];
      const collect = (value: unknown): void => {
        if (value instanceof Uint8Array) texts.push(Buffer.from(value).toString('utf8'));
        else if (Array.isArray(value)) value.forEach(collect);
        else if (value && typeof value === 'object') Object.values(value).forEach(collect);
        else if (typeof value === 'string') texts.push(value);
      };
      collect(history);
      const all = texts.join('\n');
      expect(all).toContain(created.id);
      for (const secret of secrets) expect(all).not.toContain(secret);
    }
  }, 120_000);

  test('a state that is unknown, expired, or whose integration was deleted is refused', async () => {
    const unknown = await request('GET', '/oauth/callback?code=x&state=never-issued');
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('unknown');
    const missing = await request('GET', '/oauth/callback?code=x');
    expect(missing.status).toBe(400);

    const late = await integration({ type: 'oauth' });
    const begun = await request<{ authorizationUrl: string }>('POST', `/v1/integrations/${late.id}/authorize`);
    await h.engine.db.query(`UPDATE oauth_states SET expires_at = now() - interval '1 second' WHERE integration_id = $1`, [late.id]);
    const lateUrl = new URL(await approveInBrowser(begun.body.authorizationUrl));
    const expired = await request('GET', `${lateUrl.pathname}${lateUrl.search}`);
    expect(expired.status).toBe(400);
    expect(expired.text).toContain('expired');
    expect((await view(late.id)).authorization).toBe('required');

    const gone = await integration({ type: 'oauth' });
    const begunGone = await request<{ authorizationUrl: string }>('POST', `/v1/integrations/${gone.id}/authorize`);
    const goneUrl = new URL(await approveInBrowser(begunGone.body.authorizationUrl));
    expect((await request('DELETE', `/v1/integrations/${gone.id}`)).status).toBe(204);
    const orphan = await request('GET', `${goneUrl.pathname}${goneUrl.search}`);
    expect(orphan.status).toBe(400);
    expect(orphan.text).toContain('unknown');

    // Markup in the query is never echoed as markup.
    const refused = await integration({ type: 'oauth' });
    const begunRefused = await request<{ authorizationUrl: string }>('POST', `/v1/integrations/${refused.id}/authorize`);
    const state = new URL(begunRefused.body.authorizationUrl).searchParams.get('state')!;
    const denied = await request('GET', `/oauth/callback?state=${encodeURIComponent(state)}&error=access_denied&error_description=${encodeURIComponent('<script>x</script>')}`);
    expect(denied.status).toBe(400);
    expect(denied.text).toContain('access_denied');
    expect(denied.text).not.toContain('<script>');
  }, 120_000);

  test('an access token about to expire is refreshed, and the refresh token rotates', async () => {
    server.setAccessTtl(30);
    try {
      const created = await integration({ type: 'oauth' });
      await authorize(created.id);
      const firstExpiry = (await view(created.id)).expiresAt!;
      const refreshes = server.stats.refreshes;
      const run = await runTool(created.id, created.name, 'echo', { text: 'fresh' });
      expect(run).toMatchObject({ status: 'completed', output: 'echo: fresh' });
      expect(server.stats.refreshes).toBeGreaterThan(refreshes);
      const after = await view(created.id);
      expect(after.authorization).toBe('authorized');
      expect(Date.parse(after.expiresAt!)).toBeGreaterThan(Date.parse(firstExpiry));
    } finally {
      server.setAccessTtl(3600);
    }
  }, 120_000);

  test('a refused refresh, and a token revoked at the provider: the LLM is told an operator must authorize', async () => {
    server.setAccessTtl(30);
    server.failRefresh(true);
    try {
      const failing = await integration({ type: 'oauth' });
      await authorize(failing.id);
      const run = await runTool(failing.id, failing.name, 'echo', { text: 'x' });
      expect(run).toMatchObject({ status: 'completed', output: NEEDS(failing.name) });
      expect((await view(failing.id)).authorization).toBe('expired');
    } finally {
      server.failRefresh(false);
      server.setAccessTtl(3600);
    }

    const revoked = await integration({ type: 'oauth' });
    await authorize(revoked.id);
    expect((await runTool(revoked.id, revoked.name, 'echo', { text: 'a' })).output).toBe('echo: a');
    server.revokeAll();
    const run = await runTool(revoked.id, revoked.name, 'echo', { text: 'b' });
    expect(run).toMatchObject({ status: 'completed', output: NEEDS(revoked.name) });
    expect((await view(revoked.id)).authorization).toBe('expired');

    // Authorizing again mends it.
    await authorize(revoked.id);
    expect((await runTool(revoked.id, revoked.name, 'echo', { text: 'c' })).output).toBe('echo: c');
  }, 180_000);

  test('an authorization server that is down when a token needs refreshing (503, 502, no answer): the integration is unreachable for now, its tokens are kept, and once the server answers again the next run refreshes them', async () => {
    server.setAccessTtl(30);
    try {
      const created = await integration({ type: 'oauth' });
      await authorize(created.id);
      const authorizations = server.stats.authorizations;
      const outages: [TokenOutage, string][] = [
        [{ status: 503, body: JSON.stringify({ error: 'temporarily_unavailable' }), contentType: 'application/json' }, 'HTTP 503'],
        [{ status: 502, body: '<html>Bad Gateway</html>', contentType: 'text/html' }, 'HTTP 502'],
        ['no answer', 'fetch failed (other side closed)'],
      ];
      for (const [outage, why] of outages) {
        server.setTokenOutage(outage);
        const answered = server.stats.tokenOutageAnswers;
        // The server is unreachable for now, as one that is down: the run goes on without its tools.
        const run = await runTool(created.id, created.name, 'echo', { text: 'down' });
        expect(server.stats.tokenOutageAnswers).toBeGreaterThan(answered);
        expect(run.status).toBe('completed');
        expect(run.output).not.toContain('an operator must authorize');
        const caps = await request<{ detail: string }>('GET', `/v1/integrations/${created.id}/capabilities`);
        expect(caps.status).toBe(502);
        expect(caps.body.detail).toContain(`the authorization server of integration ${created.name} did not answer the token refresh (${why})`);
        expect((await view(created.id)).authorization).toBe('authorized');
      }
      server.setTokenOutage(undefined);
      const refreshes = server.stats.refreshes;
      expect((await runTool(created.id, created.name, 'echo', { text: 'back' })).output).toBe('echo: back');
      expect(server.stats.refreshes).toBeGreaterThan(refreshes);
      expect(server.stats.authorizations).toBe(authorizations);
    } finally {
      server.setTokenOutage(undefined);
      server.setAccessTtl(3600);
    }
  }, 180_000);

  test('two workers refreshing at once refresh once and keep the rotated refresh token', async () => {
    server.setAccessTtl(30);
    const created = await integration({ type: 'oauth' });
    await authorize(created.id);
    server.setAccessTtl(3600);
    server.setRefreshDelayMs(500);
    // Two workers: two pools, two connections, one database.
    const pools = [createPool(testStack().databases.embedded, logger), createPool(testStack().databases.embedded, logger)];
    try {
      const integrationRow = (await findIntegration(h.engine.db, created.id))!;
      const before = { ...server.stats };
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
      const init = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body };
      const answers = await Promise.all(pools.map((db) => authorizedFetch({ records: oauthRecords(db), logger }, integrationRow, defaultFetch)(server.url, init)));
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      await Promise.all(answers.map((a) => a.body?.cancel()));
      expect(server.stats.refreshes).toBe(before.refreshes + 1);
      expect(server.stats.refreshFailures).toBe(before.refreshFailures);
      // The rotated refresh token is the one stored: a later refresh works.
      server.setRefreshDelayMs(0);
      server.setAccessTtl(30);
      await h.engine.db.query(`UPDATE integration_oauth SET expires_at = now() WHERE id = $1`, [created.id]);
      expect((await runTool(created.id, created.name, 'echo', { text: 'still' })).output).toBe('echo: still');
    } finally {
      server.setRefreshDelayMs(0);
      server.setAccessTtl(3600);
      await Promise.all(pools.map((p) => p.end()));
    }
  }, 120_000);

  test('DELETE …/authorization revokes at the server and forgets; tokens never leave the engine', async () => {
    const created = await integration({ type: 'oauth' });
    await authorize(created.id);
    const revocations = server.stats.revocations;
    const deleted = await request<{ authorization: string; revokedAtServer: boolean }>('DELETE', `/v1/integrations/${created.id}/authorization`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ authorization: 'required', revokedAtServer: true });
    expect(server.stats.revocations).toBeGreaterThan(revocations);
    const run = await runTool(created.id, created.name, 'echo', { text: 'x' });
    expect(run.output).toBe(NEEDS(created.name));

    const tokens = server.issuedTokens();
    expect(tokens.length).toBeGreaterThan(4);
    const stored = (await h.engine.db.query<{ t: string }>(`SELECT (SELECT string_agg(t::text, '') FROM integration_oauth t)
      || (SELECT coalesce(string_agg(s::text, ''), '') FROM oauth_states s) AS t`)).rows[0].t;
    for (const token of tokens) {
      expect(stored).not.toContain(token);
      for (const body of bodies) expect(body).not.toContain(token);
    }
  }, 120_000);

  test('a changed URL or OAuth client forgets the tokens: they were issued for the old one', async () => {
    const created = await integration({ type: 'oauth' });
    await authorize(created.id);
    const headersOnly = await request<IntegrationBody>('PATCH', `/v1/integrations/${created.id}`, { transport: { headers: { 'x-extra': '1' } } });
    expect(headersOnly.status).toBe(200);
    expect(headersOnly.body.authorization).toBe('authorized');
    const moved = await request<IntegrationBody>('PATCH', `/v1/integrations/${created.id}`, { transport: { url: `${server.url}?elsewhere=1` } });
    expect(moved.status).toBe(200);
    expect(moved.body.authorization).toBe('required');
    const stored = await h.engine.db.query('SELECT 1 FROM integration_oauth WHERE id = $1', [created.id]);
    expect(stored.rowCount).toBe(0);
  }, 60_000);

  test('agent-engine integrations authorize prints the URL, then waits until the callback has landed', async () => {
    const created = await integration({ type: 'oauth' });
    const cli = h.cli(['integrations', 'authorize', created.name]);
    const link = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/;
    await waitFor(async () => link.test(cli.out.screen), 30_000, 'the CLI to print the authorization URL');
    // It waits: nothing is authorized before the browser comes back.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(cli.out.screen).toContain('waiting for the authorization');
    expect(cli.out.screen).not.toContain('is authorized');
    const callback = await approveInBrowser(cli.out.screen.match(link)![1]);
    expect(callback.startsWith(`${h.url}/oauth/callback?`)).toBe(true);
    const page = await fetch(callback);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('is authorized');
    expect(await cli.done).toBe(0);
    expect(cli.out.screen).toContain(`${created.name} is authorized (scopes: mcp:tools)`);
  }, 60_000);

  test('authorizing and revoking are admin acts; the callback needs no key (its state is the proof)', async () => {
    const apiKey = 'api-key-0123456789abcdef';
    const adminApiKey = 'admin-key-0123456789abcdef';
    const keyed = await buildApp({ db: h.engine.db, client: h.engine.client, taskQueue: h.engine.taskQueue, logger, apiKey, adminApiKey });
    try {
      const created = await integration({ type: 'oauth' });
      const as = (key: string) => ({ authorization: `Bearer ${key}` });
      const refused = await keyed.inject({ method: 'POST', url: `/v1/integrations/${created.id}/authorize`, headers: as(apiKey) });
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({ code: 'admin_required' });
      const revoke = await keyed.inject({ method: 'DELETE', url: `/v1/integrations/${created.id}/authorization`, headers: as(apiKey) });
      expect(revoke.statusCode).toBe(403);
      const begun = await keyed.inject({ method: 'POST', url: `/v1/integrations/${created.id}/authorize`, headers: as(adminApiKey) });
      expect(begun.statusCode).toBe(200);
      const back = new URL(await approveInBrowser(begun.json<{ authorizationUrl: string }>().authorizationUrl));
      const page = await keyed.inject({ method: 'GET', url: `${back.pathname}${back.search}` });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('is authorized');
    } finally {
      await keyed.close();
    }
  }, 60_000);

  test('the OAuth client and scopes (transport.auth) are the operator\'s: the user key gets 403 naming body.transport.auth and the tokens stay; the admin key may', async () => {
    const apiKey = 'api-key-0123456789abcdef';
    const adminApiKey = 'admin-key-0123456789abcdef';
    const keyed = await buildApp({ db: h.engine.db, client: h.engine.client, taskQueue: h.engine.taskQueue, logger, apiKey, adminApiKey });
    try {
      const as = (key: string) => ({ authorization: `Bearer ${key}` });
      const patch = (id: string, key: string, transport: Record<string, unknown>) =>
        keyed.inject({ method: 'PATCH', url: `/v1/integrations/${id}`, headers: as(key), payload: { transport } });
      const created = await integration({ type: 'oauth', scopes: ['mcp:tools'] });
      await authorize(created.id);
      const tokens = async () => (await h.engine.db.query('SELECT 1 FROM integration_oauth WHERE id = $1', [created.id])).rowCount;
      expect(await tokens()).toBe(1);

      for (const auth of [
        { type: 'oauth', clientId: 'the-users-client', clientSecret: 'the-users-secret' },
        { type: 'oauth', clientMetadataUrl: 'https://client.example/metadata.json' },
        { type: 'oauth', scopes: ['mcp:tools', 'admin'] },
      ]) {
        const refused = await patch(created.id, apiKey, { auth });
        expect([refused.statusCode, refused.json()]).toEqual([403, expect.objectContaining({ code: 'admin_required', detail: expect.stringContaining('body.transport.auth') })]);
        expect(refused.body).not.toContain('the-users-secret');
      }
      // With a new URL, the 403 names both.
      const both = await patch(created.id, apiKey, { url: `${server.url}?elsewhere=1`, auth: { type: 'oauth', clientId: 'x' } });
      expect(both.json().detail).toEqual(expect.stringMatching(/body\.transport\.url, body\.transport\.auth/));
      expect((await view(created.id))).toMatchObject({ authorization: 'authorized', transport: { auth: { type: 'oauth', scopes: ['mcp:tools'], clientSecretSet: false } } });
      expect((await view(created.id)).transport.auth).not.toHaveProperty('clientId');
      expect(await tokens()).toBe(1);

      // The same block again (in another key order), or headers alone, change no client: the user's.
      const same = await patch(created.id, apiKey, { auth: { scopes: ['mcp:tools'], type: 'oauth' }, headers: { 'x-extra': '1' } });
      expect([same.statusCode, same.json().authorization]).toEqual([200, 'authorized']);
      expect(await tokens()).toBe(1);

      const byOperator = await patch(created.id, adminApiKey, { auth: { type: 'oauth', scopes: ['mcp:tools'], clientId: 'operators-client' } });
      expect([byOperator.statusCode, byOperator.json().authorization, byOperator.json().transport.auth.clientId]).toEqual([200, 'required', 'operators-client']);
      expect(await tokens()).toBe(0);

      // A new integration's client is the user's choice, as its URL is: there is no authorization yet to lose.
      const mine = await keyed.inject({
        method: 'POST', url: '/v1/integrations', headers: as(apiKey),
        payload: { name: `oauth-users-${suffix()}`, transport: { type: 'http', url: server.url, auth: { type: 'oauth', clientId: 'the-users-client' } } },
      });
      expect([mine.statusCode, mine.json().authorization]).toEqual([201, 'required']);
    } finally {
      await keyed.close();
    }
  }, 60_000);

  test('the server must be on an allowed address, and auth settings are checked without echoing secrets', async () => {
    const metadata = await request<IntegrationBody>('POST', '/v1/integrations', {
      name: `oauth-meta-${suffix()}`, transport: { type: 'http', url: 'http://169.254.169.254/mcp', auth: { type: 'oauth' } },
    });
    const refused = await request<{ detail: string }>('POST', `/v1/integrations/${metadata.body.id}/authorize`);
    expect(refused.status).toBe(502);
    expect(refused.body.detail).toMatch(/169\.254\.169\.254|refused|link-local|metadata/i);

    const invalid = await request<{ detail: string }>('POST', '/v1/integrations', {
      name: `oauth-bad-${suffix()}`, transport: { type: 'http', url: server.url, auth: { type: 'oauth', clientSecret: 'only-a-secret' } },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.detail).toContain('clientSecret');
    expect(invalid.body.detail).not.toContain('only-a-secret');
  }, 60_000);
});
