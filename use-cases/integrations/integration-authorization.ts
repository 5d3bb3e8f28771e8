import type { Integration } from '../../core/integration';
import { authorizationView, type AuthorizationView } from '../../store/integrations/oauth';
import {
  bindAuthorizationState, claimAuthorizationState, readAuthorizationStarter, readAuthorizationUrl, saveAuthorizationCode,
} from '../../store/integrations/oauth-states';
import { findTenantIntegration } from '../../store/integrations/integrations';
import type { Db } from '../../store/pool';
import { requireAuthorizer, type Caller } from '../caller';
import { EngineError } from '../../core/engine-error';
import {
  beginIntegrationAuthorization, completeIntegrationAuthorization, revokeIntegrationAuthorization, type WorkerQuestionDeps,
} from '../worker-questions';
import { loadIntegration } from './integrations';

/**
 * The MCP authorization flow of an HTTP integration (OAuth 2.1 with PKCE), as the operator or a
 * principal with the tenant's `manage` drives it. Everything that talks to the MCP server or its authorization server runs on a worker.
 */

export type AuthorizationDeps = WorkerQuestionDeps & { db: Db };

/** The caller's tenant's, by id or name, and an HTTP server: only those use OAuth. */
async function loadAuthorizable(db: Db, caller: Caller, ref: string): Promise<Integration> {
  const integration = await loadIntegration(db, caller.tenantId, ref);
  if (integration.transport.type !== 'http') {
    throw new EngineError('not_authorizable', `Integration ${integration.name} is a stdio server: only HTTP servers use OAuth`);
  }
  return integration;
}

/**
 * The URL a person opens to authorize the integration; the authorization server sends the browser
 * back to `redirectUrl`. The authorization is bound to the caller's tenant and principal before
 * its URL (which carries the state) leaves.
 */
export async function startAuthorization(deps: AuthorizationDeps, caller: Caller, ref: string, redirectUrl: string) {
  requireAuthorizer(caller, 'authorizing an integration');
  const integration = await loadAuthorizable(deps.db, caller, ref);
  const { stateId, expiresAt } = await beginIntegrationAuthorization(deps, integration, redirectUrl);
  const bound = await bindAuthorizationState(deps.db, stateId, { tenantId: caller.tenantId, principalId: caller.principal.id });
  const authorizationUrl = bound ? await readAuthorizationUrl(deps.db, stateId) : undefined;
  if (!authorizationUrl) {
    throw new EngineError('authorization_failed', `Starting the authorization of ${integration.name} failed: its record is gone`);
  }
  return { authorizationUrl, expiresAt, redirectUrl };
}

/** Revokes the tokens at the server when it offers revocation, and forgets them. */
export async function revokeAuthorization(
  deps: AuthorizationDeps, caller: Caller, ref: string,
): Promise<AuthorizationView & { revokedAtServer: boolean }> {
  requireAuthorizer(caller, 'revoking an integration\'s authorization');
  const integration = await loadAuthorizable(deps.db, caller, ref);
  const { revokedAtServer } = await revokeIntegrationAuthorization(deps, integration);
  return { ...(await authorizationView(deps.db, integration)), revokedAtServer };
}

/**
 * What the browser is shown after the redirect: authorized; refused (the redirect cannot be
 * honoured, or the authorization server said no); failed (the exchange failed); or no worker answered.
 */
export interface RedirectOutcome {
  kind: 'authorized' | 'refused' | 'failed' | 'no_answer';
  title: string;
  detail: string;
}

export interface AuthorizationRedirect {
  code?: string;
  state?: string;
  error?: string;
  error_description?: string;
  /** RFC 9207: who answered; the exchange refuses a mix-up with another authorization server */
  iss?: string;
}

const UNCLAIMED = {
  unknown: 'This authorization is unknown, or its integration was deleted. Start it again.',
  used: 'This authorization link was already used. Start it again.',
  expired: 'This authorization expired (after 10 minutes). Start it again.',
} as const;

const failed = (detail: string): RedirectOutcome => ({ kind: 'refused', title: 'Authorization failed', detail });

/**
 * The authorization server's redirect back: its single-use `state` is what authenticates it (the
 * redirect carries no API key). Claim the state → find its integration in the tenant that started
 * it → exchange the code on a worker.
 */
export async function completeAuthorizationRedirect(
  deps: AuthorizationDeps, redirect: AuthorizationRedirect, log: { warn(obj: object, msg: string): void },
): Promise<RedirectOutcome> {
  const { code, state, error, error_description: description, iss } = redirect;
  if (!state) return failed('The request has no state: it did not come from an authorization this engine started.');
  // Claimed before anything else, so a replayed redirect fails even while the first is still exchanging.
  const claim = await claimAuthorizationState(deps.db, state);
  if (claim.status !== 'claimed') return failed(UNCLAIMED[claim.status]);
  // Tokens go only to the integration of the tenant that started it; an authorization nobody bound is unknown.
  const startedBy = await readAuthorizationStarter(deps.db, claim.stateId);
  if (!startedBy) return failed(UNCLAIMED.unknown);
  const integration = await findTenantIntegration(deps.db, startedBy.tenantId, claim.integrationId);
  if (!integration) return failed('The integration of this authorization no longer exists.');
  if (error) {
    const answered = `The authorization server answered ${error}${description ? `: ${description}` : ''}`;
    return { kind: 'refused', title: 'Authorization refused', detail: `${answered}. Integration ${integration.name} is not authorized.` };
  }
  if (!code) return failed('The authorization server sent no code.');
  try {
    await saveAuthorizationCode(deps.db, claim.stateId, code, iss);
    await completeIntegrationAuthorization(deps, integration, { stateId: claim.stateId });
  } catch (err) {
    const detail = err instanceof EngineError ? err.message : 'the engine could not complete it';
    log.warn({ integrationId: integration.id, startedBy: startedBy.principalId, err: detail }, 'OAuth callback failed');
    return { kind: err instanceof EngineError && err.code === 'timeout' ? 'no_answer' : 'failed', title: 'Authorization failed', detail };
  }
  return { kind: 'authorized', title: 'Authorized', detail: `Integration ${integration.name} is authorized: runs can use its tools now.` };
}
