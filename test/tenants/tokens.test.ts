import { randomUUID } from 'node:crypto';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { JWK } from 'jose' with { 'resolution-mode': 'import' };
import { buildApp } from '../../api/app';
import { jose } from '../../platform/jose';
import { freePort } from '../../platform/ports';
import { logger, startEngine, type Engine } from '../support/engine';
import { signingKey, startOidcProvider, stopOidcProvider, type OidcProvider } from '../support/oidc-provider';
import { waitFor } from '../support/wait';

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const suffix = randomUUID().slice(0, 8);
const ACME = `acme-${suffix}`;
const BETA = `beta-${suffix}`;
const OPERATOR_ROLE = 'engine-admin';
const secret = (id: string) => `${id}-secret-${suffix}-${suffix}`;
const CLIENTS = [
  { client_id: 'acme-app', tenant: ACME, roles: ['read', 'run', 'decide', 'manage'] },
  { client_id: 'beta-app', tenant: BETA, roles: ['read', 'run'] },
  { client_id: 'ops', tenant: 'default', roles: ['read', OPERATOR_ROLE] },
  { client_id: 'claims-operate', tenant: 'default', roles: ['read', 'operate'] },
  { client_id: 'stranger', tenant: `nowhere-${suffix}`, roles: ['read'] },
  { client_id: 'default-app', tenant: 'default', roles: ['read', 'run'] },
].map((c) => ({ ...c, client_secret: secret(c.client_id) }));

let engine: Engine;
let app: FastifyInstance;
let publicUrl: string;
let provider: OidcProvider | undefined;
const keys: Record<string, JWK> = {};

/** Starts the provider (on `port` when given, to come back at the same issuer) with these keys, the first signing. */
const startProvider = (signing: JWK[], port?: number) => startOidcProvider({ port, keys: signing, clients: CLIENTS });

async function stopProvider(): Promise<void> {
  await stopOidcProvider(provider);
  provider = undefined;
}

beforeAll(async () => {
  engine = await startEngine('embedded');
  keys.k1 = await signingKey('k1');
  keys.k2 = await signingKey('k2');
  keys.outsider = await signingKey('k9');
  provider = await startProvider([keys.k1]);
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  app = await buildApp({
    db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY,
    publicUrl, tokenAuth: {
      issuer: provider.issuer, audience: `${publicUrl}/mcp`, tenantClaim: 'tenant', rolesClaim: 'roles', operatorRole: OPERATOR_ROLE,
    },
  });
  await app.listen({ host: '127.0.0.1', port });
  for (const name of [ACME, BETA]) {
    const res = await app.inject({ method: 'POST', url: '/v1/tenants', payload: { name }, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(res.statusCode).toBe(201);
  }
}, 120_000);
afterAll(async () => {
  await app?.close();
  await stopProvider();
  await engine?.close();
});

/** An access token from the provider (client credentials, RFC 8707 resource indicator). */
async function tokenOf(clientId: string, resource = `${publicUrl}/mcp`): Promise<string> {
  const res = await fetch(`${provider!.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret(clientId)}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'openid' }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** A token signed here, with claims and header as a test wants them (valid ones unless a test says otherwise). */
async function forged(claims: Record<string, unknown>, opts: { key?: JWK; alg?: string; kid?: string } = {}): Promise<string> {
  const { SignJWT, importJWK } = await jose();
  const now = Math.floor(Date.now() / 1000);
  const key = opts.key ?? keys.k1;
  const standard = { sub: 'forged', iss: provider!.issuer, aud: `${publicUrl}/mcp`, iat: now, exp: now + 300 };
  return new SignJWT({ tenant: ACME, roles: ['read'], ...standard, ...claims })
    .setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: opts.kid ?? key.kid })
    .sign(await importJWK(key, 'RS256'));
}

const as = (token: string) => (options: InjectOptions) =>
  app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${token}` } });

describe('tokens from the identity provider', () => {
  test("a tenant's token acts in its tenant with its roles", async () => {
    const acme = await tokenOf('acme-app');
    const tenants = await as(acme)({ method: 'GET', url: '/v1/tenants' });
    expect(tenants.statusCode).toBe(200);
    expect(tenants.json().tenants.map((t: { name: string }) => t.name)).toEqual([ACME]);
    const issued = await as(acme)({ method: 'POST', url: '/v1/keys', payload: { name: 'from-token', roles: ['read'] } });
    expect(issued.statusCode).toBe(201);
    expect(issued.json()).toMatchObject({ createdBy: 'sub:acme-app' });
    const beta = await tokenOf('beta-app');
    expect((await as(beta)({ method: 'POST', url: '/v1/keys', payload: { name: 'x', roles: ['read'] } })).json()).toMatchObject({ code: 'forbidden' });
  });

  test('operate comes from a token only through AUTH_OPERATOR_ROLE', async () => {
    const ops = await tokenOf('ops');
    expect((await as(ops)({ method: 'POST', url: '/v1/tenants', payload: { name: `ops-${suffix}` } })).statusCode).toBe(201);
    const claimsOperate = await tokenOf('claims-operate');
    const refused = await as(claimsOperate)({ method: 'POST', url: '/v1/tenants', payload: { name: `no-${suffix}` } });
    expect(refused.statusCode).toBe(403);
  });

  test("a token whose tenant the engine does not know is refused with 403", async () => {
    const res = await as(await tokenOf('stranger'))({ method: 'GET', url: '/v1/threads' });
    expect(res.statusCode).toBe(403);
  });

  test.each([
    ['expired (past the 60 s leeway)', () => forged({ exp: Math.floor(Date.now() / 1000) - 120 })],
    ['not yet valid (past the 60 s leeway)', () => forged({ nbf: Math.floor(Date.now() / 1000) + 120 })],
    ['from another issuer', () => forged({ iss: 'https://elsewhere.example.com' })],
    ['for another audience', () => forged({ aud: 'https://other.example.com/mcp' })],
    ['signed by a key the issuer does not publish', () => forged({}, { key: keys.outsider, kid: 'k9' })],
    ['signed by an unknown key under a known kid', () => forged({}, { key: keys.outsider, kid: 'k1' })],
    ['unsigned (alg none)', async () => {
      const { UnsecuredJWT } = await jose();
      const now = Math.floor(Date.now() / 1000);
      return new UnsecuredJWT({ tenant: ACME, roles: ['read'] }).setSubject('x').setIssuer(provider!.issuer)
        .setAudience(`${publicUrl}/mcp`).setExpirationTime(now + 300).encode();
    }],
    ['HS256, signed with the public key as its secret', async () => {
      const { SignJWT } = await jose();
      const { n, e, kty } = keys.k1;
      const publicJwk = Buffer.from(JSON.stringify({ e, kty, n }));
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ tenant: ACME, roles: ['read'] }).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).setSubject('x')
        .setIssuer(provider!.issuer).setAudience(`${publicUrl}/mcp`).setExpirationTime(now + 300).sign(new Uint8Array(publicJwk));
    }],
  ])('a token %s answers 401', async (_what, make) => {
    const res = await as(await make())({ method: 'GET', url: '/v1/threads' });
    expect(res.statusCode).toBe(401);
  });

  test('exp and nbf are checked with 60 s of leeway', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect((await as(await forged({ exp: now - 30 }))({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
    expect((await as(await forged({ nbf: now + 30 }))({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
  });

  test('a token the provider issued for another resource is refused (no passthrough)', async () => {
    const elsewhere = await tokenOf('acme-app', 'https://other-resource.example.com/mcp');
    expect((await as(elsewhere)({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(401);
    expect((await as(await forged({}))({ method: 'GET', url: '/v1/threads' })).statusCode).toBe(200);
  });

  test('a key the issuer rotates in is accepted once published', async () => {
    const port = Number(new URL(provider!.issuer).port);
    await stopProvider();
    provider = await startProvider([keys.k2, keys.k1], port);
    const rotated = await tokenOf('acme-app');
    expect(JSON.parse(Buffer.from(rotated.split('.')[0], 'base64url').toString()).kid).toBe('k2');
    // The JWKS is fetched again for an unknown kid, at most every 5 s.
    await waitFor(async () => (await as(rotated)({ method: 'GET', url: '/v1/threads' })).statusCode === 200, 15_000, 'the rotated key accepted');
  });
});

describe('/mcp as an OAuth protected resource', () => {
  test('its metadata (RFC 9728) at both addresses, named by every 401', async () => {
    for (const url of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ resource: `${publicUrl}/mcp`, authorization_servers: [provider!.issuer], scopes_supported: expect.any(Array) });
    }
    const refused = await app.inject({ method: 'POST', url: '/mcp', payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toBe(`Bearer resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp"`);
  });

  test("the MCP client SDK's OAuth flow signs in through the provider and calls an agent", async () => {
    const name = `signed_in_${suffix}`;
    const created = await app.inject({
      method: 'POST', url: '/v1/agents', headers: { authorization: `Bearer ${API_KEY}` },
      payload: { name, model: { provider: 'scripted', script: [{ text: 'signed in and answered' }] } },
    });
    expect(created.statusCode).toBe(201);
    const authProvider = new ClientCredentialsProvider({
      clientId: 'default-app', clientSecret: secret('default-app'), scope: 'openid', expectedIssuer: provider!.issuer,
    });
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${publicUrl}/mcp`), { authProvider }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain(name);
      const result = await client.callTool({ name, arguments: { input: 'hello' } }, { timeout: 120_000 });
      expect(JSON.stringify(result.content)).toContain('signed in and answered');
      expect(authProvider.tokens()?.access_token).toBeTruthy();
    } finally {
      await client.close();
    }
  });
});
