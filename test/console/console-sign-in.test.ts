import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { freePort } from '../../platform/ports';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { browserDescribe, ensureConsoleBuilt, launchBrowser } from '../support/browser';
import { openConsolePage, problemsOf } from '../support/console-engine';
import { signingKey, startOidcProvider, stopOidcProvider, type OidcProvider } from '../support/oidc-provider';

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const suffix = randomUUID().slice(0, 8);
const ACME = `acme-${suffix}`;
const BETA = `beta-${suffix}`;
const CONSOLE_CLIENT = 'engine-console';
const WAIT_MS = 30_000;

/**
 * The console signs in with the operator's identity provider (a real oidc-provider on loopback):
 * authorization code with PKCE in the browser, the access token in the tab's sessionStorage only,
 * the caller shown from GET /v1/me, and only the caller's tenant's runs listed. A key still works,
 * and shows its caller too.
 */
browserDescribe('the console signs in with the identity provider', () => {
  let api: ApiEngine;
  let provider: OidcProvider | undefined;
  let publicUrl: string;
  let browser: Browser;
  const runs: Record<string, string> = {};
  const keys: Record<string, string> = {};

  const as = (key: string) => (options: InjectOptions) =>
    api.app.inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });

  /** A run of the tenant whose key this is, started through the API. */
  async function startRunWith(key: string): Promise<string> {
    const agent = await as(key)({ method: 'POST', url: '/v1/agents', payload: { name: `agent-${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'hello' }] } } });
    expect(agent.statusCode).toBe(201);
    const thread = await as(key)({ method: 'POST', url: '/v1/threads', payload: { agentId: agent.json().id } });
    const run = await as(key)({ method: 'POST', url: `/v1/threads/${thread.json().id}/runs`, payload: { input: 'hi' } });
    expect(run.statusCode).toBe(202);
    return run.json().id;
  }

  beforeAll(async () => {
    await ensureConsoleBuilt();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    provider = await startOidcProvider({
      keys: [await signingKey('k1')], clients: [],
      publicClients: [{ client_id: CONSOLE_CLIENT, redirect_uris: [`${publicUrl}/console/`] }],
      accounts: [{ id: 'alice', name: 'Alice Example', tenant: ACME, roles: ['read', 'run'] }],
    });
    api = await startApiEngine('embedded', {
      apiKey: API_KEY, adminApiKey: ADMIN_KEY, rateLimitPerMinute: 0, publicUrl,
      tokenAuth: { issuer: provider.issuer, audience: `${publicUrl}/mcp`, tenantClaim: 'tenant', rolesClaim: 'roles', consoleClientId: CONSOLE_CLIENT },
    });
    await api.app.listen({ host: '127.0.0.1', port });
    for (const name of [ACME, BETA]) {
      const tenant = await as(ADMIN_KEY)({ method: 'POST', url: '/v1/tenants', payload: { name } });
      expect(tenant.statusCode).toBe(201);
      const issued = await as(ADMIN_KEY)({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.json().id, name: `${name}-key`, roles: ['read', 'run', 'manage'] } });
      keys[name] = issued.json().key;
      runs[name] = await startRunWith(keys[name]);
    }
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stopApiEngine(api);
    await stopOidcProvider(provider);
  });

  test("the console's policy lets it reach exactly the issuer's origin, and the sign-in is read without a key", async () => {
    const page = await api.app.inject({ method: 'GET', url: '/console/' });
    expect(page.headers['content-security-policy']).toBe(
      `default-src 'self'; script-src 'self'; connect-src 'self' ${provider!.issuer}; img-src 'self' data:; style-src 'self'; `
      + "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    const auth = { issuer: provider!.issuer, clientId: CONSOLE_CLIENT, resource: `${publicUrl}/mcp`, redirectUri: `${publicUrl}/console/` };
    expect((await api.app.inject({ method: 'GET', url: '/console/sign-in' })).json()).toEqual({ auth });
    expect((await as(API_KEY)({ method: 'GET', url: '/v1/console/settings' })).json()).toMatchObject({ auth });
  });

  test("a person signs in through the provider, sees who they are and their tenant's runs only; the token is in sessionStorage alone", async () => {
    const page = await openConsolePage(browser, `${publicUrl}/console#/`);
    const authorizations: string[] = [];
    page.on('request', (request) => {
      const { authorization } = request.headers();
      if (request.url().startsWith(`${publicUrl}/v1/`) && authorization) authorizations.push(authorization);
    });
    await page.getByRole('heading', { name: 'Sign in to use this API' }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: `Sign in with ${new URL(provider!.issuer).host}` }).click();
    await signInAtProvider(page, 'alice');

    await page.locator(`tr[data-run-id="${runs[ACME]}"]`).waitFor({ timeout: WAIT_MS });
    expect(await page.locator(`tr[data-run-id="${runs[BETA]}"]`).count()).toBe(0);
    const caller = page.getByTestId('caller');
    await caller.getByText('Alice Example').waitFor({ timeout: WAIT_MS });
    expect(await caller.locator('.caller-tenant').textContent()).toBe(ACME);
    expect(page.url()).toBe(`${publicUrl}/console/#/`);

    const stored = await page.evaluate('({ ...sessionStorage })') as Record<string, string>;
    expect(Object.keys(stored)).toEqual(['agent-engine.accessToken']);
    const token = stored['agent-engine.accessToken'];
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ iss: provider!.issuer, aud: `${publicUrl}/mcp`, sub: 'alice', tenant: ACME });
    expect(authorizations).toContain(`Bearer ${token}`);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await page.evaluate('document.cookie')).not.toContain(token);
    expect((await page.context().cookies()).some((c) => c.value.includes(token))).toBe(false);

    // A token the API no longer takes (expired, say) asks for a sign-in again; the provider's session spares the login form.
    await page.evaluate("sessionStorage.setItem('agent-engine.accessToken', 'ended.token.value')");
    await page.goto(`${publicUrl}/console#/inbox`);
    await page.getByRole('heading', { name: 'Your sign-in has ended' }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: `Sign in with ${new URL(provider!.issuer).host}` }).click();
    await caller.getByText('Alice Example').waitFor({ timeout: WAIT_MS });
    expect(page.url()).toBe(`${publicUrl}/console/#/inbox`);
    expect(await page.evaluate("sessionStorage.getItem('agent-engine.accessToken')")).not.toBe('ended.token.value');

    await caller.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to use this API' }).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    // The provider's development pages import a web font from the Internet, which tests do not reach.
    expect(problemsOf(page).filter((line) => !line.endsWith('net::ERR_NAME_NOT_RESOLVED'))).toEqual([]);
    await page.close();
  });

  test('a sign-in that comes back to a tab that did not start it is refused in words, and leaves the address bar', async () => {
    const page = await openConsolePage(browser, `${publicUrl}/console/?code=forged&state=forged`);
    await page.getByRole('alert').getByText('This tab did not start the sign-in').waitFor({ timeout: WAIT_MS });
    expect(page.url()).toBe(`${publicUrl}/console/`);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.close();
  });

  test('with a key, the console shows whose key it is, and Sign out forgets it', async () => {
    const page = await openConsolePage(browser, `${publicUrl}/console`);
    await page.locator('.key-form input[name=key]').fill(keys[BETA]);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.locator(`tr[data-run-id="${runs[BETA]}"]`).waitFor({ timeout: WAIT_MS });
    const caller = page.getByTestId('caller');
    await caller.getByText(`${BETA}-key`).waitFor({ timeout: WAIT_MS });
    expect(await caller.locator('.caller-tenant').textContent()).toBe(BETA);
    expect(await page.locator(`tr[data-run-id="${runs[ACME]}"]`).count()).toBe(0);
    await caller.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to use this API' }).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });
});

/** The provider's development pages: the login form (the account's id, any password), then consent. */
async function signInAtProvider(page: Page, account: string): Promise<void> {
  await page.locator('input[name=login]').fill(account);
  await page.locator('input[name=password]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}
