import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import type {
  OAuthClientMetadata, OAuthClientProvider, OAuthDiscoveryState, StoredOAuthClientInformation, StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { InjectOptions } from 'fastify';
import type { Browser } from 'playwright-core';
import { freePort } from '../../platform/ports';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { browserDescribe, launchBrowser } from '../support/browser';
import { signingKey, startOidcProvider, stopOidcProvider, type OidcProvider } from '../support/oidc-provider';

const ADMIN_KEY = `admin-${randomUUID()}`;
const suffix = randomUUID().slice(0, 8);
const TENANT_A = `a-${suffix}`;
const TENANT_B = `b-${suffix}`;
const CLIENT_ID = 'desktop-mcp-client';
const WAIT_MS = 30_000;

/**
 * A public OAuth client as an interactive MCP client (a desktop app, an IDE) implements it: the
 * fixed client id; the PKCE verifier, the discovery (which binds the callback to the provider that
 * was asked) and the tokens kept in memory; the authorization URL handed to whoever plays the user
 * (here, the test's browser).
 */
class InteractiveClientProvider implements OAuthClientProvider {
  readonly authorizationUrls: URL[] = [];
  readonly sentState = randomUUID();
  private verifier?: string;
  private saved?: StoredOAuthTokens;
  private discovery?: OAuthDiscoveryState;

  constructor(private readonly callback: string) {}

  get redirectUrl(): string { return this.callback; }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'desktop MCP client', redirect_uris: [this.callback], grant_types: ['authorization_code'], token_endpoint_auth_method: 'none' };
  }
  state(): string { return this.sentState; }
  clientInformation(): StoredOAuthClientInformation { return { client_id: CLIENT_ID }; }
  tokens(): StoredOAuthTokens | undefined { return this.saved; }
  saveTokens(tokens: StoredOAuthTokens): void { this.saved = tokens; }
  redirectToAuthorization(url: URL): void { this.authorizationUrls.push(url); }
  saveCodeVerifier(verifier: string): void { this.verifier = verifier; }
  saveDiscoveryState(state: OAuthDiscoveryState): void { this.discovery = state; }
  discoveryState(): OAuthDiscoveryState | undefined { return this.discovery; }
  codeVerifier(): string {
    if (!this.verifier) throw new Error('no PKCE verifier saved: the authorization did not start');
    return this.verifier;
  }
}

/** What the MCP client's HTTP requests were answered (the SDK's fetch, the provider's discovery included). */
interface Exchange { method: string; url: string; status: number; wwwAuthenticate: string | null }

/**
 * A remote MCP client signs in to /mcp by itself, as the MCP authorization spec has it: the 401's
 * resource metadata (RFC 9728) names the provider, the SDK's authorization code flow with PKCE asks
 * for the resource /mcp (RFC 8707), a person signs in at the provider in a real browser, and the
 * token the SDK redeems calls the person's tenant's agent (and no other tenant's).
 */
browserDescribe("an interactive MCP client signs in to /mcp through the provider (authorization code + PKCE)", () => {
  let api: ApiEngine;
  let provider: OidcProvider | undefined;
  let browser: Browser;
  let publicUrl: string;
  let callback: string;
  const agentA = `answers_a_${suffix}`;
  const agentB = `answers_b_${suffix}`;
  const clients: Client[] = [];

  const admin = (options: InjectOptions) =>
    api.app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${ADMIN_KEY}` } });

  /** A tenant and its scripted agent, created through the API with a key of that tenant. */
  async function tenantWithAgent(name: string, agent: string, text: string): Promise<void> {
    const tenant = await admin({ method: 'POST', url: '/v1/tenants', payload: { name } });
    expect(tenant.statusCode).toBe(201);
    const key = await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.json().id, name: 'setup', roles: ['read', 'manage'] } });
    expect(key.statusCode).toBe(201);
    const created = await api.app.inject({
      method: 'POST', url: '/v1/agents', headers: { authorization: `Bearer ${key.json().key}` },
      payload: { name: agent, model: { provider: 'scripted', script: [{ text }] } },
    });
    expect(created.statusCode).toBe(201);
  }

  beforeAll(async () => {
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    // The client's loopback redirect: nothing listens there, the browser's route catches it.
    callback = `http://127.0.0.1:${await freePort()}/callback`;
    provider = await startOidcProvider({
      keys: [await signingKey('k1')], clients: [],
      publicClients: [{ client_id: CLIENT_ID, redirect_uris: [callback] }],
      accounts: [{ id: 'alice', name: 'Alice Example', tenant: TENANT_A, roles: ['read', 'run'] }],
    });
    api = await startApiEngine('embedded', {
      adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0, publicUrl,
      tokenAuth: { issuer: provider.issuer, audience: `${publicUrl}/mcp`, tenantClaim: 'tenant', rolesClaim: 'roles' },
    });
    await api.app.listen({ host: '127.0.0.1', port });
    await tenantWithAgent(TENANT_A, agentA, 'answered in tenant A');
    await tenantWithAgent(TENANT_B, agentB, 'answered in tenant B');
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    for (const client of clients) await client.close();
    await browser?.close();
    await stopApiEngine(api ?? {});
    await stopOidcProvider(provider);
  });

  /** The person at the provider: its login form (the account's id, any password), then consent; the redirect's URL, caught. */
  async function signInInBrowser(authorizationUrl: URL): Promise<URL> {
    const page = await browser.newPage();
    try {
      const redirected = new Promise<URL>((resolve) => {
        void page.route(`${callback}**`, async (route) => {
          resolve(new URL(route.request().url()));
          await route.fulfill({ contentType: 'text/plain', body: 'You may close this window.' });
        });
      });
      await page.goto(authorizationUrl.href);
      await page.locator('input[name=login]').fill('alice');
      await page.locator('input[name=password]').fill('any password');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      await page.getByRole('button', { name: 'Continue' }).click();
      return await Promise.race([redirected, page.waitForTimeout(WAIT_MS).then(() => { throw new Error('no redirect to the client'); })]);
    } finally {
      await page.close();
    }
  }

  test("the SDK follows the 401 to the provider, the person signs in, and the token lists and calls the tenant's agent only", async () => {
    const exchanges: Exchange[] = [];
    const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      exchanges.push({ method: init?.method ?? 'GET', url, status: response.status, wwwAuthenticate: response.headers.get('www-authenticate') });
      return response;
    };
    const oauth = new InteractiveClientProvider(callback);
    const transport = () => new StreamableHTTPClientTransport(new URL(`${publicUrl}/mcp`), { authProvider: oauth, fetch: recordingFetch });

    // No token yet: /mcp answers 401 naming its metadata, and the SDK asks the person to sign in.
    const first = new Client({ name: 'desktop', version: '1.0.0' });
    clients.push(first);
    const pending = transport();
    await expect(first.connect(pending)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(exchanges[0]).toMatchObject({
      method: 'POST', url: `${publicUrl}/mcp`, status: 401,
      wwwAuthenticate: `Bearer resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp"`,
    });
    expect(exchanges.map((e) => e.url)).toContain(`${publicUrl}/.well-known/oauth-protected-resource/mcp`);
    expect(oauth.authorizationUrls).toHaveLength(1);
    const authorizationUrl = oauth.authorizationUrls[0];
    expect(authorizationUrl.href.startsWith(`${provider!.issuer}/`)).toBe(true);
    expect(Object.fromEntries(authorizationUrl.searchParams)).toMatchObject({
      client_id: CLIENT_ID, response_type: 'code', redirect_uri: callback, resource: `${publicUrl}/mcp`,
      code_challenge_method: 'S256', code_challenge: expect.stringMatching(/^[\w-]{43}$/), state: oauth.sentState,
    });
    expect(oauth.tokens()).toBeUndefined();

    const redirect = await signInInBrowser(authorizationUrl);
    expect(redirect.searchParams.get('state')).toBe(oauth.sentState);
    await pending.finishAuth(redirect.searchParams);

    const claims = JSON.parse(Buffer.from(oauth.tokens()!.access_token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ iss: provider!.issuer, aud: `${publicUrl}/mcp`, sub: 'alice', tenant: TENANT_A, roles: ['read', 'run'] });

    const client = new Client({ name: 'desktop', version: '1.0.0' });
    clients.push(client);
    await client.connect(transport());
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain(agentA);
    expect(tools).not.toContain(agentB);
    const result = await client.callTool({ name: agentA, arguments: { input: 'hello' } }, { timeout: 120_000 });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain('answered in tenant A');
    // Every /mcp request after the sign-in carried the token: none was refused again.
    const afterSignIn = exchanges.slice(exchanges.findIndex((e) => e.url.startsWith(`${provider!.issuer}/token`)) + 1);
    expect(afterSignIn.filter((e) => e.url === `${publicUrl}/mcp`).map((e) => e.status)).not.toContain(401);
  });
});
