import { secretKeys } from '../../platform/secrets/key-ring';
import { isSealed, open, seal } from '../../platform/secrets/secret-box';
import type { Integration } from '../../core/integration';
import type { AuthChallenge, OAuthRecord, OAuthRecords, StoredStatus } from '../../core/oauth';
import { inTransaction, type Db, type Queryable } from '../pool';

export type AuthorizationStatus = 'not_required' | 'required' | 'authorized' | 'expired';

/** What GET /v1/integrations/:id and /capabilities show: never a token. */
export interface AuthorizationView {
  authorization: AuthorizationStatus;
  expiresAt?: string;
  scopes?: string[];
  /** when the current tokens were first obtained (by the callback) */
  authorizedAt?: string;
}

export const integrationOAuthContext = (id: string) => `integration_oauth:${id}`;

interface Row {
  status: StoredStatus;
  sealed: unknown;
  scopes: string[];
  expires_at: Date | null;
  has_refresh_token: boolean;
  authorized_at: Date | null;
}

export async function readOAuthRecord(
  db: Queryable, integrationId: string,
): Promise<{ status: StoredStatus; record: OAuthRecord } | undefined> {
  const { rows } = await db.query<Row>('SELECT status, sealed FROM integration_oauth WHERE id = $1', [integrationId]);
  if (!rows[0]) return undefined;
  const { sealed } = rows[0];
  const record = isSealed(sealed) ? JSON.parse(open(secretKeys(), sealed, integrationOAuthContext(integrationId))) as OAuthRecord : {};
  return { status: rows[0].status, record };
}

/** Stores the record; the status follows from its tokens unless given. */
export async function writeOAuthRecord(db: Queryable, integrationId: string, record: OAuthRecord, status?: StoredStatus): Promise<void> {
  const tokens = record.tokens;
  const next: StoredStatus = status ?? (tokens ? 'authorized' : 'required');
  const scopes = tokens?.scope ? tokens.scope.split(' ').filter(Boolean) : [];
  const expiresAt = tokens && record.accessExpiresAt ? new Date(record.accessExpiresAt) : null;
  const sealed = seal(secretKeys(), JSON.stringify(record), integrationOAuthContext(integrationId));
  await db.query(
    `INSERT INTO integration_oauth (id, status, sealed, scopes, expires_at, has_refresh_token, authorized_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $2 = 'authorized' THEN now() END, now())
     ON CONFLICT (id) DO UPDATE SET status = $2, sealed = $3, scopes = $4, expires_at = $5, has_refresh_token = $6,
       authorized_at = CASE WHEN $2 = 'authorized' AND integration_oauth.status <> 'authorized' THEN now()
                            WHEN $2 = 'authorized' THEN integration_oauth.authorized_at END,
       updated_at = now()`,
    [integrationId, next, JSON.stringify(sealed), scopes, expiresAt, Boolean(tokens?.refresh_token)],
  );
}


/**
 * Keeps the server's latest challenge, which the next authorization follows (its resource metadata
 * may live at a URL only the challenge names; a step-up names the scope it needs). A server that
 * refused without the engine holding tokens marks the integration as needing authorization.
 */
export async function recordChallenge(db: Queryable, integrationId: string, challenge: AuthChallenge): Promise<void> {
  await db.query(
    `INSERT INTO integration_oauth (id, status, challenge) VALUES ($1, 'required', $2)
     ON CONFLICT (id) DO UPDATE SET challenge = $2, updated_at = now()`,
    [integrationId, JSON.stringify(challenge)],
  );
}

export async function readChallenge(db: Queryable, integrationId: string): Promise<AuthChallenge | undefined> {
  const { rows } = await db.query<{ challenge: AuthChallenge | null }>(
    'SELECT challenge FROM integration_oauth WHERE id = $1',
    [integrationId],
  );
  return rows[0]?.challenge ?? undefined;
}

/** The tokens no longer work and could not be refreshed: an operator must authorize again. */
export async function markAuthorizationExpired(db: Queryable, integrationId: string): Promise<void> {
  await db.query(
    `UPDATE integration_oauth SET status = 'expired', updated_at = now() WHERE id = $1 AND status = 'authorized'`,
    [integrationId],
  );
}

export async function hasOAuthRow(db: Queryable, integrationId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM integration_oauth WHERE id = $1', [integrationId]);
  return (rowCount ?? 0) > 0;
}

/**
 * Runs fn while holding the integration's refresh lock (a transaction-scoped advisory lock), so
 * that two workers refreshing at once take turns: the second reads the tokens the first stored
 * instead of presenting a refresh token the server has already rotated away.
 */
export function withRefreshLock<T>(db: Db, integrationId: string, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return inTransaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [integrationOAuthContext(integrationId)]);
    return fn(tx);
  });
}

export async function authorizationViews(db: Queryable, integrations: Integration[]): Promise<Map<string, AuthorizationView>> {
  const { rows } = await db.query<Row & { id: string }>(
    'SELECT id, status, scopes, expires_at, has_refresh_token, authorized_at FROM integration_oauth WHERE id = ANY($1)',
    [integrations.map((i) => i.id)],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const views = new Map<string, AuthorizationView>();
  const now = Date.now();
  for (const integration of integrations) {
    const row = byId.get(integration.id);
    const configured = integration.transport.type === 'http' && integration.transport.auth?.type === 'oauth';
    if (!row) {
      views.set(integration.id, { authorization: configured ? 'required' : 'not_required' });
      continue;
    }
    // An access token past its expiry with no refresh token cannot be renewed without a person.
    const lapsed = row.status === 'authorized' && row.expires_at !== null && row.expires_at.getTime() <= now && !row.has_refresh_token;
    views.set(integration.id, {
      authorization: lapsed ? 'expired' : row.status,
      ...(row.expires_at && row.status !== 'required' ? { expiresAt: row.expires_at.toISOString() } : {}),
      ...(row.status !== 'required' ? { scopes: row.scopes } : {}),
      ...(row.authorized_at && row.status !== 'required' ? { authorizedAt: row.authorized_at.toISOString() } : {}),
    });
  }
  return views;
}

export async function authorizationView(db: Queryable, integration: Integration): Promise<AuthorizationView> {
  return (await authorizationViews(db, [integration])).get(integration.id)!;
}

/** The records of a database (or of one transaction), as the MCP client's OAuth code reaches them. */
export function oauthRecords(db: Queryable): OAuthRecords {
  return {
    read: (id) => readOAuthRecord(db, id),
    write: (id, record, status) => writeOAuthRecord(db, id, record, status),
    readChallenge: (id) => readChallenge(db, id),
    recordChallenge: (id, challenge) => recordChallenge(db, id, challenge),
    markExpired: (id) => markAuthorizationExpired(db, id),
    exists: (id) => hasOAuthRow(db, id),
    withRefreshLock: (id, fn) => withRefreshLock(db as Db, id, (tx) => fn(oauthRecords(tx))),
  };
}
