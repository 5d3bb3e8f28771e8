import { ApplicationFailure } from '@temporalio/activity';
import { readOAuthRecord, writeOAuthRecord } from '../store/integrations/oauth';
import {
  forgetAuthorizationCode, readAuthorizationState, saveAuthorizationState, STATE_TTL_MS,
} from '../store/integrations/oauth-states';
import { findIntegration, touchIntegration } from '../store/integrations/integrations';
import { type Integration } from '../core/integration';
import type { Queryable } from '../store/pool';
import { mcpErrorText } from '../core/mcp-error-text';
import { beginAuthorization, completeAuthorization, revokeAtServer } from '../mcp-client/oauth/oauth-provider';
import type { ActivityDeps } from './deps';
import { oauthRecords } from '../store/integrations/oauth';

/*
 * The MCP authorization flow's steps that talk to the server and its authorization server:
 * discovery and registration (begin), the code exchange (complete) and revocation. The API
 * asks a worker for each through a short workflow (workflows/helper-workflows.ts), as it does
 * for capabilities. None is retried: an authorization code is single-use, and a person waits.
 */

async function httpIntegration(db: Queryable, integrationId: string): Promise<Integration> {
  const integration = await findIntegration(db, integrationId);
  if (!integration) throw ApplicationFailure.nonRetryable(`Integration ${integrationId} does not exist`, 'IntegrationNotFound');
  if (integration.transport.type !== 'http') {
    const message = `Integration ${integration.name} is a stdio server: only HTTP servers use OAuth`;
    throw ApplicationFailure.nonRetryable(message, 'NotAuthorizable');
  }
  return integration;
}

const authorizationFailed = (message: string) => ApplicationFailure.nonRetryable(message, 'AuthorizationFailed');

/** Answers the id of the authorization in PostgreSQL: its URL carries the state, which no history may hold. */
async function beginIntegrationAuthorization(
  { db, logger, mcpPool }: ActivityDeps, input: { integrationId: string; redirectUrl: string },
): Promise<{ stateId: string; expiresAt: string }> {
  const integration = await httpIntegration(db, input.integrationId);
  let begun;
  try {
    begun = await beginAuthorization(oauthRecords(db), integration, input.redirectUrl, mcpPool.fetchFor(integration));
  } catch (err) {
    throw authorizationFailed(`Starting the authorization of ${integration.name} failed: ${mcpErrorText(err)}`);
  }
  const stateId = await saveAuthorizationState(db, {
    integrationId: integration.id, state: begun.state, codeVerifier: begun.codeVerifier, redirectUrl: input.redirectUrl,
    authorizationUrl: begun.authorizationUrl,
  });
  logger.info({ integrationId: integration.id }, 'OAuth authorization started');
  return { stateId, expiresAt: new Date(Date.now() + STATE_TTL_MS).toISOString() };
}

/** The code the callback stored with the claimed state is exchanged, then forgotten: it works once. */
async function completeIntegrationAuthorization(
  { db, logger, mcpPool }: ActivityDeps, input: { stateId: string },
): Promise<{ integrationName: string }> {
  const state = await readAuthorizationState(db, input.stateId);
  if (!state) throw ApplicationFailure.nonRetryable('This authorization is unknown or its integration was deleted', 'IntegrationNotFound');
  if (!state.code) throw authorizationFailed('This authorization has no code from the authorization server');
  const integration = await httpIntegration(db, state.integrationId);
  try {
    const grant = { code: state.code, iss: state.iss, codeVerifier: state.codeVerifier, redirectUrl: state.redirectUrl };
    await completeAuthorization(oauthRecords(db), integration, grant, mcpPool.fetchFor(integration));
  } catch (err) {
    throw authorizationFailed(`The authorization server did not issue tokens for ${integration.name}: ${mcpErrorText(err)}`);
  } finally {
    await forgetAuthorizationCode(db, input.stateId);
  }
  // Every worker reconnects with the new tokens (or none).
  await touchIntegration(db, integration.id);
  logger.info({ integrationId: integration.id }, 'OAuth authorization completed');
  return { integrationName: integration.name };
}

/** Revokes at the server when it offers revocation, then forgets the tokens (the registered client stays). */
async function revokeIntegrationAuthorization(
  { db, logger, mcpPool }: ActivityDeps, input: { integrationId: string },
): Promise<{ revokedAtServer: boolean }> {
  const integration = await httpIntegration(db, input.integrationId);
  const row = await readOAuthRecord(db, integration.id);
  if (!row) return { revokedAtServer: false };
  const revokedAtServer = await revokeAtServer(integration, row.record, mcpPool.fetchFor(integration)).catch((err: unknown) => {
    const why = mcpErrorText(err);
    logger.warn({ integrationId: integration.id, err: why }, 'OAuth revocation at the server failed; forgetting the tokens anyway');
    return false;
  });
  await writeOAuthRecord(db, integration.id, { ...row.record, tokens: undefined, accessExpiresAt: undefined }, 'required');
  // Every worker reconnects with the new tokens (or none).
  await touchIntegration(db, integration.id);
  logger.info({ integrationId: integration.id, revokedAtServer }, 'OAuth authorization revoked');
  return { revokedAtServer };
}

export function createOAuthActivities(deps: ActivityDeps) {
  return {
    beginIntegrationAuthorization: (input: { integrationId: string; redirectUrl: string }) => beginIntegrationAuthorization(deps, input),
    completeIntegrationAuthorization: (input: { stateId: string }) => completeIntegrationAuthorization(deps, input),
    revokeIntegrationAuthorization: (input: { integrationId: string }) => revokeIntegrationAuthorization(deps, input),
  };
}
