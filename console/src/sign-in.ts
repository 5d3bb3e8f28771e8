import * as oauth from 'oauth4webapi';

/**
 * Signing in with the operator's identity provider (GET /console/sign-in says whether the API has
 * one for the console): the authorization code flow with PKCE (S256) of a public client, through
 * oauth4webapi. The `state` and `code_verifier` wait in sessionStorage for the provider's redirect
 * back to this page; the access token asked for the API's audience (RFC 8707 `resource`) is the
 * tab's credential, kept where a key is kept (api.ts). The ID token is checked and not kept.
 */

export interface SignInSettings {
  issuer: string;
  clientId: string;
  /** the API's audience, asked for as the token's resource */
  resource: string;
  /** this page's address, registered with the provider */
  redirectUri: string;
}

const ROUND_TRIP_ITEM = 'agent-engine.signIn';

interface RoundTrip {
  state: string;
  codeVerifier: string;
  /** the page's hash route when the sign-in began, restored after it */
  hash: string;
}

/** How this API lets the console sign in: null for keys only. */
export async function signInSettings(): Promise<SignInSettings | null> {
  const response = await fetch('/console/sign-in', { credentials: 'omit' });
  if (!response.ok) return null;
  return ((await response.json()) as { auth: SignInSettings | null }).auth;
}

/** The provider's host, as the sign-in button names it. */
export const providerName = (settings: SignInSettings): string => new URL(settings.issuer).host;

/** oauth4webapi refuses http: an http issuer is one the operator configured (a development provider). */
const transport = (issuer: URL) => (issuer.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true } : {});

async function discover(settings: SignInSettings): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(settings.issuer);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...transport(issuer) });
  return oauth.processDiscoveryResponse(issuer, response);
}

/** Sends the browser to the provider's sign-in page; it comes back to redirectUri with ?code&state. */
export async function beginSignIn(settings: SignInSettings): Promise<void> {
  const server = await discover(settings);
  if (!server.authorization_endpoint) throw new Error('The identity provider names no authorization endpoint');
  const roundTrip: RoundTrip = {
    state: oauth.generateRandomState(), codeVerifier: oauth.generateRandomCodeVerifier(), hash: location.hash,
  };
  sessionStorage.setItem(ROUND_TRIP_ITEM, JSON.stringify(roundTrip));
  const url = new URL(server.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: settings.clientId, redirect_uri: settings.redirectUri, response_type: 'code', scope: 'openid',
    state: roundTrip.state, code_challenge: await oauth.calculatePKCECodeChallenge(roundTrip.codeVerifier), code_challenge_method: 'S256',
    resource: settings.resource,
  }).toString();
  location.assign(url.href);
}

/** Whether this page is the provider's redirect back (a code, or an error, with a state). */
export const isSignInReturn = (): boolean => new URLSearchParams(location.search).has('state');

/**
 * Completes a sign-in the provider sent back: the code and state leave the address bar first (a
 * code is good once, and must not stay in the history), then the code is exchanged for the access
 * token. Throws with a message a person can read when the provider refused or the round trip is not this tab's.
 */
export async function completeSignIn(settings: SignInSettings): Promise<string> {
  const returned = new URL(location.href);
  const saved = sessionStorage.getItem(ROUND_TRIP_ITEM);
  sessionStorage.removeItem(ROUND_TRIP_ITEM);
  const roundTrip = saved ? JSON.parse(saved) as RoundTrip : undefined;
  history.replaceState(null, '', `${returned.pathname}${roundTrip?.hash ?? ''}`);
  if (!roundTrip) throw new Error('This tab did not start the sign-in it came back from: sign in again');
  const server = await discover(settings);
  const client: oauth.Client = { client_id: settings.clientId };
  try {
    const params = oauth.validateAuthResponse(server, client, returned, roundTrip.state);
    const response = await oauth.authorizationCodeGrantRequest(server, client, oauth.None(), params, settings.redirectUri,
      roundTrip.codeVerifier, { additionalParameters: { resource: settings.resource }, ...transport(new URL(settings.issuer)) });
    return (await oauth.processAuthorizationCodeResponse(server, client, response)).access_token;
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError || err instanceof oauth.ResponseBodyError) {
      throw new Error(`The identity provider refused the sign-in: ${err.error_description ?? err.error}`, { cause: err });
    }
    throw err;
  }
}
