import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Logger } from '../../platform/logger';
import {
  completeAuthorizationRedirect, revokeAuthorization, startAuthorization, type AuthorizationDeps, type RedirectOutcome,
} from '../../use-cases/integrations/integration-authorization';
import { idParams, problemResponse, timestamp } from '../schemas';
import { authorizationFields } from './integration-schemas';

/**
 * The MCP authorization flow of an HTTP integration (use-cases/integrations/integration-authorization.ts):
 * POST …/authorize answers the URL a person opens; the authorization server sends the browser
 * back to GET /oauth/callback (outside /v1: a redirect carries no API key, so the single-use
 * `state` it brings is what authenticates it); DELETE …/authorization revokes and forgets.
 */

export const OAUTH_CALLBACK_PATH = '/oauth/callback';

export interface OAuthRoutesOptions {
  db: AuthorizationDeps['db'];
  client: Client;
  taskQueue: string;
  logger: Logger;
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

/** The page's status for each outcome of the redirect. */
const PAGE_STATUS: Record<RedirectOutcome['kind'], number> = { authorized: 200, refused: 400, failed: 502, no_answer: 504 };

const htmlPage = (description: string) => ({ description, content: { 'text/html': { schema: z.string() } } });

const callbackQuery = z.looseObject({
  code: z.string().max(4096).optional(), state: z.string().max(512).optional(),
  error: z.string().max(256).optional(), error_description: z.string().max(1024).optional(),
  // RFC 9207: the authorization server names itself, so a response from another one is refused.
  iss: z.string().max(2048).optional(),
});

export const oauthCallbackRoutes: FastifyPluginAsyncZod<Omit<OAuthRoutesOptions, 'publicUrl'>> = async (app, opts) => {
  const deps = { db: opts.db, client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.waitMs };

  app.get(OAUTH_CALLBACK_PATH, {
    schema: {
      tags: ['integrations'], summary: "The authorization server's redirect back: a page for the person's browser, not JSON",
      querystring: callbackQuery,
      response: {
        200: htmlPage('Authorized'), 400: htmlPage('Refused, unknown, used or expired'), 502: htmlPage('The exchange failed'),
        504: htmlPage('No worker answered'),
      },
    },
  }, async (request, reply) => {
    const outcome = await completeAuthorizationRedirect(deps, request.query, request.log);
    return page(reply, PAGE_STATUS[outcome.kind], outcome.title, outcome.detail);
  });
};

export const integrationOAuthRoutes: FastifyPluginAsyncZod<OAuthRoutesOptions> = async (app, opts) => {
  const deps = { db: opts.db, client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.waitMs };

  app.post('/integrations/:id/authorize', {
    config: { role: 'manage' },
    schema: {
      tags: ['integrations'], summary: 'Start the OAuth authorization of an HTTP integration (admin): returns the URL a person opens',
      params: idParams,
      response: {
        200: z.object({ authorizationUrl: z.string(), expiresAt: timestamp, redirectUrl: z.string() }),
        400: problemResponse('Not an HTTP integration'), 403: problemResponse('Needs the admin key'),
        404: problemResponse('No such integration'),
        502: problemResponse('The server or its authorization server failed'), 504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request) => startAuthorization(deps, request.caller, request.params.id, callbackUrl(request, opts.publicUrl)));

  app.delete('/integrations/:id/authorization', {
    config: { role: 'manage' },
    schema: {
      tags: ['integrations'], summary: 'Revoke (at the server when it offers revocation) and forget the tokens (admin)', params: idParams,
      response: {
        200: z.object({ ...authorizationFields, revokedAtServer: z.boolean() }),
        400: problemResponse('Not an HTTP integration'), 403: problemResponse('Needs the admin key'),
        404: problemResponse('No such integration'),
        502: problemResponse('The worker failed'), 504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request) => revokeAuthorization(deps, request.caller, request.params.id));
};
