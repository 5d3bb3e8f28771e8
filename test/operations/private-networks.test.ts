import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/http-mcp-server';

/*
 * With API keys set, an integration reaches loopback and private addresses only when the operator
 * says so (allowPrivateNetwork), and the worker decides when it connects. The MCP servers here all
 * listen on 127.0.0.1, as an internal service next to the engine would.
 */
const API_KEY = 'user-key-0123456789abcdef';
const ADMIN_KEY = 'admin-key-0123456789abcdef';
const suffix = () => randomUUID().slice(0, 8);

interface Integration { id: string; name: string; allowPrivateNetwork: boolean }

describe('private networks are the operator\'s to open, per integration', () => {
  let keyed: ApiEngine;
  let server: HttpMcpServer;

  const as = (key: string) => (options: InjectOptions) => keyed.app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
  const user = as(API_KEY);
  const admin = as(ADMIN_KEY);
  const http = (url: string) => ({ type: 'http', url });
  const capabilities = (id: string) => user({ method: 'GET', url: `/v1/integrations/${id}/capabilities` });

  beforeAll(async () => {
    server = await startHttpMcpServer();
    keyed = await startApiEngine('embedded', { apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0 });
  });
  afterAll(async () => {
    await stopApiEngine(keyed);
    await server.close();
  });

  test('a user key setting allowPrivateNetwork gets 403 naming the field; the admin key sets it on create, change and import', async () => {
    const refused = await user({ method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: http(server.url.json), allowPrivateNetwork: true } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'admin_required', detail: expect.stringMatching(/^body\.allowPrivateNetwork: only the operator/) });

    const created = await user({ method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: http(server.url.json) } });
    expect(created.statusCode).toBe(201);
    expect(created.json<Integration>().allowPrivateNetwork).toBe(false);
    const url = `/v1/integrations/${created.json<Integration>().id}`;
    expect((await user({ method: 'PATCH', url, payload: { allowPrivateNetwork: true } })).json()).toMatchObject({ status: 403, detail: expect.stringMatching(/^body\.allowPrivateNetwork/) });
    const patched = await admin({ method: 'PATCH', url, payload: { allowPrivateNetwork: true } });
    expect(patched.json<Integration>().allowPrivateNetwork).toBe(true);

    const doc = { mcpServers: { [`p-${suffix()}`]: { url: server.url.json, allowPrivateNetwork: true } } };
    expect((await user({ method: 'POST', url: '/v1/integrations/import', payload: doc })).json()).toMatchObject({ status: 403, code: 'admin_required' });
    const imported = await admin({ method: 'POST', url: '/v1/integrations/import', payload: doc });
    expect(imported.json<{ integrations: Integration[] }>().integrations[0].allowPrivateNetwork).toBe(true);
  });

  test('without it, the worker refuses the loopback server when it connects, before sending anything; with it, the capabilities are listed', async () => {
    const created = (await user({ method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: http(server.url.json) } })).json<Integration>();
    const before = server.hits.get('/json') ?? 0;
    const refused = await capabilities(created.id);
    expect(refused.statusCode).toBe(502);
    expect(refused.json().detail).toContain(
      "connection to 127.0.0.1 refused: loopback addresses are refused because the integration does not have allowPrivateNetwork (an operator's setting)",
    );
    // A name is judged by what it resolves to when the worker connects, not when the integration was made.
    const port = new URL(server.url.json).port;
    await admin({ method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { transport: { url: `http://localhost:${port}/json` } } });
    expect((await capabilities(created.id)).json().detail).toMatch(/connection to localhost \((127\.0\.0\.1|::1)\) refused: loopback addresses/);
    expect(server.hits.get('/json') ?? 0).toBe(before);

    await admin({ method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { transport: { url: server.url.json }, allowPrivateNetwork: true } });
    const listed = await capabilities(created.id);
    expect(listed.statusCode).toBe(200);
    expect(listed.json<{ tools: { name: string }[] }>().tools.map((t) => t.name)).toContain('sized');
  });

  test('an upstream error names its status only: its body and reason phrase reach no answer (Streamable HTTP and the older transport)', async () => {
    for (const url of [server.url.fail, server.url.legacyFail]) {
      const created = (await admin({ method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: http(url), allowPrivateNetwork: true } })).json<Integration>();
      const failed = await capabilities(created.id);
      expect(failed.statusCode).toBe(502);
      expect(failed.json().detail).toContain('HTTP 502 Bad Gateway');
      expect(failed.body).not.toContain(server.secret);
      expect(failed.body).not.toContain('hunter2');
    }
    // A parse error quotes the start of what it could not read.
    const notJson = (await admin({ method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: http(server.url.notJson), allowPrivateNetwork: true } })).json<Integration>();
    const unreadable = await capabilities(notJson.id);
    expect(unreadable.json().detail).toBe(`Integration ${notJson.name} is unreachable: the server's answer is not valid JSON`);
  });

  test('the OAuth requests of an integration follow its flag, and an authorization server\'s error names its status only', async () => {
    const created = (await admin({
      method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: { ...http(server.url.oauthFail), auth: { type: 'oauth' } } },
    })).json<Integration>();
    const authorize = () => admin({ method: 'POST', url: `/v1/integrations/${created.id}/authorize` });
    const refused = await authorize();
    expect(refused.statusCode).toBe(502);
    expect(refused.json().detail).toContain('connection to 127.0.0.1 refused: loopback addresses are refused because the integration does not have allowPrivateNetwork');

    await admin({ method: 'PATCH', url: `/v1/integrations/${created.id}`, payload: { allowPrivateNetwork: true } });
    const failed = await authorize();
    expect(failed.statusCode).toBe(502);
    expect(failed.json().detail).toContain('HTTP 500 Internal Server Error');
    expect(failed.body).not.toContain(server.secret);
    expect(failed.body).not.toContain('hunter2');
    expect(server.hits.get('/oauth-fail/register')).toBeGreaterThan(0);
  });
});

describe('an API on loopback without an admin key', () => {
  let open: ApiEngine;
  let server: HttpMcpServer;
  let app: FastifyInstance;

  beforeAll(async () => {
    server = await startHttpMcpServer();
    open = await startApiEngine('embedded');
    app = open.app;
  });
  afterAll(async () => {
    await stopApiEngine(open);
    await server.close();
  });

  test('reaches loopback servers without the flag, as before: every caller is the operator there', async () => {
    const created = await app.inject({ method: 'POST', url: '/v1/integrations', payload: { name: `p-${suffix()}`, transport: { type: 'http', url: server.url.json } } });
    expect(created.json<Integration>().allowPrivateNetwork).toBe(false);
    const listed = await app.inject({ method: 'GET', url: `/v1/integrations/${created.json<Integration>().id}/capabilities` });
    expect(listed.statusCode).toBe(200);
  });
});
