import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { TokenAuthConfig } from '../../platform/token-auth-config';

export interface ConsoleSettings {
  /** the Temporal Web UI's base URL (npm start's dev server, or TEMPORAL_UI_URL); absent: the console shows no link */
  temporalUiUrl?: string;
  namespace: string;
  /** the provider sign-in (AUTH_ISSUER with AUTH_CONSOLE_CLIENT_ID); absent: the console asks for a key only */
  signIn?: ConsoleSignIn;
}

/** How the console signs in with the operator's provider: all public (a public client has no secret). */
export interface ConsoleSignIn {
  issuer: string;
  clientId: string;
  /** the resource indicator (RFC 8707) asked for, so that the access token's `aud` is the API's audience */
  resource: string;
  /** where the provider sends the browser back: the console's own page */
  redirectUri: string;
}

/** The console's sign-in, when the provider and the console's client are both configured. */
export function consoleSignIn(tokenAuth: TokenAuthConfig | undefined, publicUrl: string | undefined): ConsoleSignIn | undefined {
  if (!tokenAuth?.consoleClientId || !publicUrl) return undefined;
  return {
    issuer: tokenAuth.issuer, clientId: tokenAuth.consoleClientId, resource: tokenAuth.audience,
    redirectUri: `${publicUrl.replace(/\/+$/, '')}/console/`,
  };
}

const signInSchema = z.object({
  issuer: z.string().describe('the OpenID Connect issuer (AUTH_ISSUER); its discovery document names the endpoints'),
  clientId: z.string()
    .describe('the console\'s public client at the provider (AUTH_CONSOLE_CLIENT_ID): authorization code with PKCE, no secret'),
  resource: z.string().describe('the resource indicator (RFC 8707) the console asks tokens for: the API\'s audience'),
  redirectUri: z.string().describe('the redirect URI to register for the client: PUBLIC_URL/console/'),
}).nullable().describe('the sign-in with the operator\'s identity provider; null: the console asks for a key only');

const consoleSettingsSchema = z.object({
  temporalUiUrl: z.string().nullable()
    .describe('the Temporal Web UI\'s base URL; null: none is configured (TEMPORAL_UI_URL), and the console links no run there'),
  namespace: z.string()
    .describe('the Temporal namespace of the runs: a run\'s workflow is {temporalUiUrl}/namespaces/{namespace}/workflows/{run id}'),
  auth: signInSchema,
});

/** What the console needs besides the API's data: where a run's workflow can be looked at, and how to sign in. */
export const consoleSettingsRoutes: FastifyPluginAsyncZod<ConsoleSettings> = async (app, settings) => {
  app.get('/console/settings', {
    schema: {
      tags: ['console'], summary: 'The console\'s settings: the Temporal Web UI to link runs to, and the provider sign-in',
      response: { 200: consoleSettingsSchema },
    },
  }, async () => ({ temporalUiUrl: settings.temporalUiUrl ?? null, namespace: settings.namespace, auth: settings.signIn ?? null }));
};

/**
 * GET /console/sign-in, outside /v1 and without a key: the page must know how to sign in before
 * it holds any credential. It answers only what the provider publishes anyway and the client id
 * of a public client.
 */
export const consoleSignInRoutes: FastifyPluginAsyncZod<{ signIn?: ConsoleSignIn }> = async (app, { signIn }) => {
  app.get('/console/sign-in', {
    schema: {
      tags: ['console'], summary: 'How the console signs in: with a key only, or with the operator\'s identity provider',
      response: { 200: z.object({ auth: signInSchema }) },
    },
  }, async () => ({ auth: signIn ?? null }));
};
