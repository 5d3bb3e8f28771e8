import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { authorizationView } from '../../store/integrations/oauth';
import { claimAuthorizationState, readAuthorizationUrl, saveAuthorizationCode } from '../../store/integrations/oauth-states';
import { findIntegration } from '../../store/integrations/integrations';
import type { Db } from '../../store/pool';
import { resolveRef } from '../../store/refs';
import type { Logger } from '../../platform/logger';
import type { AdminPolicy } from '../auth';
import { HttpProblem } from '../../use-cases/problem';
import { idParams, problemResponse, timestamp } from '../schemas';
import {
  beginIntegrationAuthorization, completeIntegrationAuthorization, revokeIntegrationAuthorization, type WorkerQuestionDeps,
} from '../../use-cases/worker-questions';
import { authorizationFields } from './integration-schemas';

/**
 * The MCP authorization flow of an HTTP integration (OAuth 2.1 with PKCE), as an operator drives
 * it: POST …/authorize answers the URL a person opens; the authorization server sends the browser
 * back to GET /oauth/callback (outside /v1: a redirect carries no API key, so the single-use
 * `state` it brings is what authenticates it); DELETE …/authorization revokes and forgets.
 * Everything that talks to the MCP server or its authorization server runs on a worker.
 */

export const OAUTH_CALLBACK_PATH = '/oauth/callback';

export interface OAuthRoutesOptions {
  db: Db;
  client: Client;
  taskQueue: string;
  logger: Logger;
  admin: AdminPolicy;
  /** where browsers reach this API (PUBLIC_URL); absent: the address the request came to */
  publicUrl?: string;
  /** how long the API waits for a worker */
  waitMs: number;
}

/** The redirect URL registered with authorization servers: PUBLIC_URL, or this API as the operator reached it. */
export function callbackUrl(request: FastifyRequest, publicUrl: string | undefined): string {
  const base = publicUrl ?? `${request.protocol}://${request.host}`;
  return new URL(OAUTH_CALLBACK_PATH, base.endsWith('/') ? base : `${base}/`).toString();
}

async function mustFind(db: Db, ref: string) {
  const id = await resolveRef(db, 'integrations', ref);
  const integration = id === undefined ? undefined : await findIntegration(db, id);
  if (!integration) throw new HttpProblem(404, `Integration ${ref} does not exist`, 'not_found');
  if (integration.transport.type !== 'http') {
    throw new HttpProblem(400, `Integration ${integration.name} is a stdio server: only HTTP servers use OAuth`, 'not_authorizable');
  }
  return integration;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page the browser shows after the redirect: short, self-contained, nothing from the query echoed unescaped. */
function page(reply: FastifyReply, status: number, title: string, detail: string) {
  return reply.code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
    .header('referrer-policy', 'no-referrer')
    .send(`<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>`
      + '<style>body{font-family:system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}</style></head>'
      + `<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p><p>You can close this window.</p></body></html>`);
}

const UNCLAIMED = {
  unknown: 'This authorization is unknown, or its integration was deleted. Start it again.',
  used: 'This authorization link was already used. Start it again.',
  expired: 'This authorization expired (after 10 minutes). Start it again.',
} as const;

const htmlPage = (description: string) => ({ description, content: { 'text/html': { schema: z.string() } } });

const callbackQuery = z.looseObject({
  code: z.string().max(4096).optional(), state: z.string().max(512).optional(),
  error: z.string().max(256).optional(), error_description: z.string().max(1024).optional(),
});

export const oauthCallbackRoutes: FastifyPluginAsyncZod<Omit<OAuthRoutesOptions, 'admin' | 'publicUrl'>> = async (app, opts) => {
  const { db } = opts;
  const deps: WorkerQuestionDeps = { client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.waitMs };

  app.get(OAUTH_CALLBACK_PATH, {
    schema: {
      tags: ['integrations'], summary: "The authorization server's redirect back: a page for the person's browser, not JSON", querystring: callbackQuery,
      response: { 200: htmlPage('Authorized'), 400: htmlPage('Refused, unknown, used or expired'), 502: htmlPage('The exchange failed'), 504: htmlPage('No worker answered') },
    },
  }, async (request, reply) => {
    const { code, state, error, error_description: description } = request.query;
    if (!state) return page(reply, 400, 'Authorization failed', 'The request has no state: it did not come from an authorization this engine started.');
    // Claimed before anything else, so a replayed redirect fails even while the first is still exchanging.
    const claim = await claimAuthorizationState(db, state);
    if (claim.status !== 'claimed') return page(reply, 400, 'Authorization failed', UNCLAIMED[claim.status]);
    const integration = await findIntegration(db, claim.integrationId);
    if (!integration) return page(reply, 400, 'Authorization failed', 'The integration of this authorization no longer exists.');
    if (error) {
      return page(reply, 400, 'Authorization refused', `The authorization server answered ${error}${description ? `: ${description}` : ''}. Integration ${integration.name} is not authorized.`);
    }
    if (!code) return page(reply, 400, 'Authorization failed', 'The authorization server sent no code.');
    try {
      await saveAuthorizationCode(db, claim.stateId, code);
      await completeIntegrationAuthorization(deps, integration, { stateId: claim.stateId });
    } catch (err) {
      const detail = err instanceof HttpProblem ? err.message : 'the engine could not complete it';
      request.log.warn({ integrationId: integration.id, err: detail }, 'OAuth callback failed');
      return page(reply, err instanceof HttpProblem && err.status === 504 ? 504 : 502, 'Authorization failed', detail);
    }
    return page(reply, 200, 'Authorized', `Integration ${integration.name} is authorized: runs can use its tools now.`);
  });
};

export const integrationOAuthRoutes: FastifyPluginAsyncZod<OAuthRoutesOptions> = async (app, opts) => {
  const { db } = opts;
  const deps: WorkerQuestionDeps = { client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.waitMs };

  app.post('/integrations/:id/authorize', {
    schema: {
      tags: ['integrations'], summary: 'Start the OAuth authorization of an HTTP integration (admin): returns the URL a person opens', params: idParams,
      response: {
        200: z.object({ authorizationUrl: z.string(), expiresAt: timestamp, redirectUrl: z.string() }),
        400: problemResponse('Not an HTTP integration'), 403: problemResponse('Needs the admin key'), 404: problemResponse('No such integration'),
        502: problemResponse('The server or its authorization server failed'), 504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request) => {
    opts.admin.requireAdmin(request, 'authorizing an integration');
    const integration = await mustFind(db, request.params.id);
    const redirectUrl = callbackUrl(request, opts.publicUrl);
    const { stateId, expiresAt } = await beginIntegrationAuthorization(deps, integration, redirectUrl);
    const authorizationUrl = await readAuthorizationUrl(db, stateId);
    if (!authorizationUrl) throw new HttpProblem(502, `Starting the authorization of ${integration.name} failed: its record is gone`, 'authorization_failed');
    return { authorizationUrl, expiresAt, redirectUrl };
  });

  app.delete('/integrations/:id/authorization', {
    schema: {
      tags: ['integrations'], summary: 'Revoke (at the server when it offers revocation) and forget the tokens (admin)', params: idParams,
      response: {
        200: z.object({ ...authorizationFields, revokedAtServer: z.boolean() }),
        400: problemResponse('Not an HTTP integration'), 403: problemResponse('Needs the admin key'), 404: problemResponse('No such integration'),
        502: problemResponse('The worker failed'), 504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request) => {
    opts.admin.requireAdmin(request, 'revoking an integration\'s authorization');
    const integration = await mustFind(db, request.params.id);
    const { revokedAtServer } = await revokeIntegrationAuthorization(deps, integration);
    return { ...(await authorizationView(db, integration)), revokedAtServer };
  });
};
