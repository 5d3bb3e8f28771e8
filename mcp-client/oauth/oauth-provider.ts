import { randomBytes } from 'node:crypto';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/client';
import type { FetchLike } from '@modelcontextprotocol/client';
import { auth, computeScopeUnion, extractWWWAuthenticateParams, OAuthError, OAuthErrorCode } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import { toolResultText } from '../../core/tool-texts';
import type { AuthChallenge, OAuthRecord, OAuthRecords } from '../../core/oauth';
import { oauthAnswers, outageWatch } from '../transports/http-answers';
import { CLIENT_NAME, oauthSettings, StoredOAuthProvider } from './stored-provider';

/**
 * The SDK's MCP authorization client (discovery, registration, PKCE, code exchange, refresh)
 * with its state kept where the composition root says (OAuthRecords: the database's, through
 * stored-provider.ts). The SDK drives the protocol; this file only decides when a flow starts.
 */

/** An integration whose authorization is missing, revoked or could not be renewed. */
export class AuthorizationRequiredError extends Error {
  override name = 'AuthorizationRequiredError';
  constructor(integrationName: string) {
    super(toolResultText.needsAuthorization(integrationName));
  }
}

export const isAuthorizationRequired = (err: unknown): err is AuthorizationRequiredError =>
  err instanceof Error && err.name === 'AuthorizationRequiredError';

/** The authorization server failed (a 5xx, or no answer) while a token was refreshed: nothing was refused, the tokens stay. */
export class AuthorizationServerDownError extends Error {
  override name = 'AuthorizationServerDownError';
  constructor(integrationName: string, why: string) {
    super(toolResultText.authorizationServerDown(integrationName, why));
  }
}

function serverUrl(integration: Integration): string {
  if (integration.transport.type !== 'http') {
    throw new Error(`integration ${integration.name} is not an HTTP server: it has no authorization`);
  }
  return integration.transport.url;
}

const scopeOf = (integration: Integration) => oauthSettings(integration)?.scopes?.join(' ') || undefined;

/**
 * What the server asks for: its last refusal as a worker saw it, or, before any, the refusal of
 * an unauthenticated initialize. Its WWW-Authenticate may name resource metadata that lives
 * nowhere the well-known paths would find, and the scope it wants.
 */
async function challengeFor(records: OAuthRecords, integration: Integration, fetchFn: FetchLike): Promise<AuthChallenge> {
  const stored = await records.readChallenge(integration.id);
  if (stored?.resourceMetadataUrl) return stored;
  const res = await fetchFn(serverUrl(integration), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: CLIENT_NAME, version: '0.1.0' } },
    }),
  });
  await res.body?.cancel();
  if (res.status !== 401) return stored ?? {};
  const params = extractWWWAuthenticateParams(res);
  const challenge = { resourceMetadataUrl: params.resourceMetadataUrl?.toString(), scope: params.scope };
  await records.recordChallenge(integration.id, challenge);
  return challenge;
}

/**
 * Starts an authorization: discovers the authorization server, registers the engine when it has
 * no client yet, and returns the URL a person opens, with the state and PKCE verifier the
 * callback needs. Tokens held so far stay in use until the callback replaces them.
 */
export async function beginAuthorization(records: OAuthRecords, integration: Integration, redirectUrl: string, fetch: FetchLike)
  : Promise<{ authorizationUrl: string; state: string; codeVerifier: string }> {
  const fetchFn = oauthAnswers(fetch);
  const row = await records.read(integration.id);
  const stored = row?.record ?? {};
  // A client registered for another redirect URL (PUBLIC_URL changed) registers again. Discovery is
  // done afresh: the server may have moved to another authorization server (SEP-2352), and then the
  // SDK finds the stored client and tokens stamped with the old issuer and registers again.
  const { discovery: _stale, ...kept } = stored.redirectUrl && stored.redirectUrl !== redirectUrl ? {} : stored;
  const record: OAuthRecord = kept;
  const state = randomBytes(32).toString('base64url');
  // Without tokens in sight, the SDK starts a new authorization instead of refreshing.
  const withoutTokens = { ...record, tokens: undefined, accessExpiresAt: undefined, redirectUrl };
  const provider = new StoredOAuthProvider(records, integration, withoutTokens, {
    redirectUrl, state,
    preserve: { tokens: stored.tokens, accessExpiresAt: stored.accessExpiresAt, status: row?.status ?? 'required' },
  });
  const challenge = await challengeFor(records, integration, fetchFn);
  const result = await auth(provider, {
    serverUrl: serverUrl(integration), fetchFn,
    // The scope the server asked for first (SEP-835), with what was granted before (a step-up adds to
    // it, SEP-2350), then the operator's, then the SDK's pick from the metadata.
    scope: challenge.scope ? computeScopeUnion(stored.tokens?.scope, challenge.scope) : scopeOf(integration),
    ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: new URL(challenge.resourceMetadataUrl) } : {}),
  });
  if (result !== 'REDIRECT' || !provider.authorizationUrl || !provider.verifier) {
    throw new Error('the authorization server did not start an authorization');
  }
  const url = provider.authorizationUrl;
  // The browser opens it: nothing but a web address may come from the server.
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new Error(`the authorization server gave a ${url.protocol} URL to open, not an http(s) one`);
  }
  return { authorizationUrl: url.toString(), state, codeVerifier: provider.verifier };
}

/** The callback's second half: exchanges the code for tokens and stores them. */
export async function completeAuthorization(
  records: OAuthRecords,
  integration: Integration,
  input: { code: string; iss?: string; codeVerifier: string; redirectUrl: string },
  fetch: FetchLike,
): Promise<void> {
  const fetchFn = oauthAnswers(fetch);
  const record = (await records.read(integration.id))?.record ?? {};
  const { redirectUrl, codeVerifier, code: authorizationCode, iss } = input;
  const provider = new StoredOAuthProvider(records, integration, record, { redirectUrl, codeVerifier });
  const result = await auth(provider, { serverUrl: serverUrl(integration), authorizationCode, iss, scope: scopeOf(integration), fetchFn });
  if (result !== 'AUTHORIZED') throw new Error('the authorization server did not issue tokens');
}

/**
 * Renews the access token with the refresh token, inside the caller's refresh lock. Returns the
 * new tokens; throws AuthorizationRequiredError when there is nothing to refresh with or the
 * authorization server refuses (revoked, expired, rotated away).
 */
export async function refreshTokens(
  records: OAuthRecords, integration: Integration, record: OAuthRecord, fetch: FetchLike,
): Promise<OAuthRecord> {
  const watch = outageWatch(fetch);
  const fetchFn = oauthAnswers(watch.fetch);
  if (!record.tokens?.refresh_token || !record.redirectUrl) throw new AuthorizationRequiredError(integration.name);
  const provider = new StoredOAuthProvider(records, integration, record, { redirectUrl: record.redirectUrl });
  const down = () => {
    const why = watch.outage();
    return why === undefined ? undefined : new AuthorizationServerDownError(integration.name, why);
  };
  let result;
  try {
    result = await auth(provider, { serverUrl: serverUrl(integration), scope: scopeOf(integration), fetchFn });
  } catch (err) {
    // The authorization server said no (not a server that failed to answer): a person must authorize again.
    const failed = down();
    if (failed) throw failed;
    if (err instanceof OAuthError && err.code !== OAuthErrorCode.ServerError) throw new AuthorizationRequiredError(integration.name);
    throw err;
  }
  if (result === 'AUTHORIZED' && provider.record.tokens) return provider.record;
  // REDIRECT: the SDK began a new authorization nobody will finish, after a refusal, or after an
  // outage it does not tell apart from one; only a refusal ends the tokens.
  throw down() ?? new AuthorizationRequiredError(integration.name);
}

/**
 * Revokes the tokens at the authorization server when it offers revocation (RFC 7009). Returns
 * whether it did; a server without the endpoint, or one that fails, leaves forgetting to the caller.
 */
export async function revokeAtServer(integration: Integration, record: OAuthRecord, fetch: FetchLike): Promise<boolean> {
  const fetchFn = oauthAnswers(fetch);
  // OIDC discovery documents need not list it; RFC 8414 metadata may.
  const endpoint = (record.discovery?.authorizationServerMetadata as { revocation_endpoint?: string } | undefined)?.revocation_endpoint;
  const client = record.client ?? (oauthSettings(integration)?.clientId ? { client_id: oauthSettings(integration)!.clientId! } : undefined);
  if (!endpoint || !client || !record.tokens) return false;
  const secret = 'client_secret' in client ? client.client_secret : oauthSettings(integration)?.clientSecret;
  let revoked = false;
  for (const [token, hint] of [[record.tokens.refresh_token, 'refresh_token'], [record.tokens.access_token, 'access_token']] as const) {
    if (!token) continue;
    const body = new URLSearchParams({
      token, token_type_hint: hint, client_id: client.client_id, ...(secret ? { client_secret: secret } : {}),
    });
    const res = await fetchFn(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    await res.body?.cancel();
    revoked ||= res.ok;
  }
  return revoked;
}
