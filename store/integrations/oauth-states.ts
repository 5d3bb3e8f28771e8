import { createHash } from 'node:crypto';
import { secretKeys } from '../../platform/secrets/key-ring';
import { isSealed, open, seal } from '../../platform/secrets/secret-box';
import type { Queryable } from '../pool';

/**
 * Authorizations in progress (oauth_states): one row per URL handed to a person, keyed by a hash of
 * its `state`. The state (the callback's only proof), the PKCE verifier, the URL that carries the
 * state and, once the browser is back, the authorization code are sealed in the row. Workflows and
 * their histories carry the row's id only: the Temporal Web UI shows histories to whoever reaches it.
 */
export const oauthStateContext = (id: string) => `oauth_states:${id}`;

/** How long a `state` handed to a browser stays good. */
export const STATE_TTL_MS = 10 * 60_000;

/** Who started an authorization: its callback stores tokens only for an integration of this tenant. */
export interface AuthorizationStarter {
  tenantId: string;
  principalId: string;
}

interface StateSecrets {
  codeVerifier: string;
  /** set by the API that started it, before anyone is handed the URL (bindAuthorizationState) */
  startedBy?: AuthorizationStarter;
  /** the URL a person opens, state included */
  authorizationUrl?: string;
  /** what the authorization server sent back, until it is exchanged */
  code?: string;
  /** the issuer the redirect named (RFC 9207), checked against the authorization server's metadata */
  iss?: string;
}

const stateId = (state: string) => createHash('sha256').update(state).digest('hex');

async function readSecrets(
  db: Queryable, id: string,
): Promise<{ integrationId: string; redirectUrl: string; secrets: StateSecrets } | undefined> {
  const { rows } = await db.query<{ integration_id: string; sealed: unknown; redirect_url: string }>(
    'SELECT integration_id, sealed, redirect_url FROM oauth_states WHERE id = $1', [id]);
  const row = rows[0];
  if (!row || !isSealed(row.sealed)) return undefined;
  const secrets = JSON.parse(open(secretKeys(), row.sealed, oauthStateContext(id))) as StateSecrets;
  return { integrationId: row.integration_id, redirectUrl: row.redirect_url, secrets };
}

async function writeSecrets(db: Queryable, id: string, secrets: StateSecrets): Promise<void> {
  const sealed = seal(secretKeys(), JSON.stringify(secrets), oauthStateContext(id));
  await db.query('UPDATE oauth_states SET sealed = $2 WHERE id = $1', [id, JSON.stringify(sealed)]);
}

/** One authorization in progress; answers its id, which is all that leaves the worker. */
export async function saveAuthorizationState(
  db: Queryable, input: { integrationId: string; state: string; codeVerifier: string; redirectUrl: string; authorizationUrl: string },
): Promise<string> {
  const id = stateId(input.state);
  const secrets: StateSecrets = { codeVerifier: input.codeVerifier, authorizationUrl: input.authorizationUrl };
  const sealed = seal(secretKeys(), JSON.stringify(secrets), oauthStateContext(id));
  await db.query(
    `INSERT INTO oauth_states (id, integration_id, sealed, redirect_url, expires_at)
     VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')`,
    [id, input.integrationId, JSON.stringify(sealed), input.redirectUrl, STATE_TTL_MS],
  );
  // Abandoned attempts leave rows behind; a day later nobody needs them to explain a replay.
  await db.query(`DELETE FROM oauth_states WHERE expires_at < now() - interval '1 day'`);
  return id;
}

/**
 * Binds the authorization to the tenant and principal that started it, before its URL (the state)
 * is handed to anyone; false when the row is gone.
 */
export async function bindAuthorizationState(db: Queryable, id: string, startedBy: AuthorizationStarter): Promise<boolean> {
  const row = await readSecrets(db, id);
  if (!row) return false;
  await writeSecrets(db, id, { ...row.secrets, startedBy: { tenantId: startedBy.tenantId, principalId: startedBy.principalId } });
  return true;
}

/** Who started the authorization (bindAuthorizationState); undefined when nobody bound it. */
export async function readAuthorizationStarter(db: Queryable, id: string): Promise<AuthorizationStarter | undefined> {
  return (await readSecrets(db, id))?.secrets.startedBy;
}

/** The URL a person opens, for the API that started the authorization. */
export async function readAuthorizationUrl(db: Queryable, id: string): Promise<string | undefined> {
  return (await readSecrets(db, id))?.secrets.authorizationUrl;
}

export type StateClaim =
  | { status: 'claimed'; stateId: string; integrationId: string }
  | { status: 'unknown' | 'used' | 'expired' };

/** The callback's check: the state exists, is unused and young. Claiming it uses it up, whatever follows. */
export async function claimAuthorizationState(db: Queryable, state: string): Promise<StateClaim> {
  const id = stateId(state);
  const { rows } = await db.query<{ integration_id: string; expired: boolean }>(
    `UPDATE oauth_states SET used_at = now() WHERE id = $1 AND used_at IS NULL
     RETURNING integration_id, expires_at <= now() AS expired`, [id]);
  if (rows[0]) return rows[0].expired ? { status: 'expired' } : { status: 'claimed', stateId: id, integrationId: rows[0].integration_id };
  const seen = await db.query('SELECT 1 FROM oauth_states WHERE id = $1', [id]);
  return { status: (seen.rowCount ?? 0) > 0 ? 'used' : 'unknown' };
}

/** The code of a claimed state, kept sealed for the worker that exchanges it. */
export async function saveAuthorizationCode(db: Queryable, id: string, code: string, iss?: string): Promise<void> {
  const row = await readSecrets(db, id);
  if (row) await writeSecrets(db, id, { ...row.secrets, code, ...(iss === undefined ? {} : { iss }) });
}

export async function readAuthorizationState(
  db: Queryable, id: string,
): Promise<{ integrationId: string; codeVerifier: string; redirectUrl: string; code?: string; iss?: string } | undefined> {
  const row = await readSecrets(db, id);
  if (!row) return undefined;
  const { codeVerifier, code, iss } = row.secrets;
  return {
    integrationId: row.integrationId, redirectUrl: row.redirectUrl, codeVerifier, ...(code ? { code } : {}), ...(iss ? { iss } : {}),
  };
}

/** After the exchange: the code works once, and the URL is of no more use. */
export async function forgetAuthorizationCode(db: Queryable, id: string): Promise<void> {
  const row = await readSecrets(db, id);
  if (row) await writeSecrets(db, id, { codeVerifier: row.secrets.codeVerifier, startedBy: row.secrets.startedBy });
}
