import { ConfigError } from '../../platform/config';
import { isSealed, open, seal, type KeyRing, type Sealed } from '../../platform/secrets/secret-box';
import type { IntegrationTransport, OAuthSettings } from '../../core/integration';
import type { Db } from '../pool';

/**
 * An integration's secrets (stdio env values, HTTP header values) live sealed in integrations.secrets;
 * the transport column keeps only what is not secret (command, args, cwd, url). Rows written before
 * sealing existed still carry env/headers in transport: they are read as they are and sealed by
 * sealPlainIntegrationSecrets at the first start with a key.
 */
type Transport = IntegrationTransport;

interface TransportSecrets {
  env?: Record<string, string>;
  headers?: Record<string, string>;
  clientSecret?: string;
}

/** Binds a sealed value to its row: copied into another integration, it no longer opens. */
export const integrationSecretsContext = (id: string) => `integrations.secrets:${id}`;

/** The two columns to store for a transport: the transport without secret values, and the sealed secrets (or null). */
export function sealTransport(ring: KeyRing, id: string, transport: Transport): { transport: Transport; secrets: Sealed | null } {
  const { env, headers, ...rest } = transport as Transport & TransportSecrets;
  const auth = (rest as { auth?: OAuthSettings }).auth;
  const clientSecret = auth?.clientSecret;
  if (auth) {
    const { clientSecret: _secret, ...publicAuth } = auth;
    (rest as { auth?: OAuthSettings }).auth = publicAuth;
  }
  const secrets: TransportSecrets = { ...(env ? { env } : {}), ...(headers ? { headers } : {}), ...(clientSecret ? { clientSecret } : {}) };
  const none = Object.keys(env ?? {}).length === 0 && Object.keys(headers ?? {}).length === 0 && !clientSecret;
  if (none) return { transport: rest as Transport, secrets: null };
  return { transport: rest as Transport, secrets: seal(ring, JSON.stringify(secrets), integrationSecretsContext(id)) };
}

/** The transport as the worker uses it, secrets opened. */
export function openTransport(ring: KeyRing, id: string, transport: Transport, secrets: unknown): Transport {
  if (!isSealed(secrets)) return transport;
  const { clientSecret, ...opened } = JSON.parse(open(ring, secrets, integrationSecretsContext(id))) as TransportSecrets;
  const whole = { ...transport, ...opened } as Transport;
  if (clientSecret && whole.type === 'http' && whole.auth) return { ...whole, auth: { ...whole.auth, clientSecret } };
  return whole;
}

const PLAIN = "(transport ? 'env' OR transport ? 'headers')";

/**
 * Seals rows whose secrets are still in plain text, one row per transaction (a crash leaves every
 * row either plain or sealed, never half). Returns how many it sealed.
 */
export async function sealPlainIntegrationSecrets(db: Db, ring: KeyRing): Promise<number> {
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM integrations WHERE ${PLAIN} ORDER BY id`);
  let sealed = 0;
  for (const { id } of rows) {
    const client = await db.connect();
    try {
      await client.query('BEGIN');
      const row = await client.query<{ transport: Transport; secrets: unknown }>(
        `SELECT transport, secrets FROM integrations WHERE id = $1 AND ${PLAIN} FOR UPDATE`, [id]);
      if (row.rowCount === 1) {
        // A row with both (not written by this engine) keeps the sealed values where they overlap.
        const whole = openTransport(ring, id, row.rows[0].transport, row.rows[0].secrets);
        const next = sealTransport(ring, id, whole);
        // updated_at stays: the configuration did not change, so worker pools need not reconnect.
        await client.query('UPDATE integrations SET transport = $2, secrets = $3 WHERE id = $1',
          [id, JSON.stringify(next.transport), next.secrets && JSON.stringify(next.secrets)]);
        sealed += 1;
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
  return sealed;
}

/** A configuration problem: the process lacks the key for what the database holds. */
export class StoredSecretsError extends ConfigError {
  override name = 'StoredSecretsError';
}

/**
 * Start-up of an API or worker process: with no key, it refuses to start when any secret is stored;
 * with keys, it refuses when a row is sealed with a key it does not hold, then seals plain rows.
 */
export async function prepareIntegrationSecrets(db: Db, ring: KeyRing): Promise<{ sealedPlain: number }> {
  const { rows } = await db.query<{ plain: number; sealed: number }>(
    `SELECT count(*) FILTER (WHERE ${PLAIN})::int AS plain, count(*) FILTER (WHERE secrets IS NOT NULL)::int AS sealed FROM integrations`);
  const { plain, sealed } = rows[0];
  if (!ring.current) {
    if (plain + sealed === 0) return { sealedPlain: 0 };
    throw new StoredSecretsError(`The database stores secrets of ${plain + sealed} integration(s) (env or header values), `
      + 'but SECRETS_KEY is not set, so this process could neither read them nor store new ones. '
      + 'Set SECRETS_KEY (32 bytes, base64) to the key the engine uses; npm start keeps it in DATA_DIR/secrets.key.');
  }
  const known = [ring.current.id, ...(ring.previous ? [ring.previous.id] : [])];
  const unknown = await db.query<{ kid: string; n: number }>(
    `SELECT secrets->>'kid' AS kid, count(*)::int AS n FROM integrations
     WHERE secrets IS NOT NULL AND NOT (secrets->>'kid' = ANY($1)) GROUP BY 1 ORDER BY 1`, [known]);
  if (unknown.rows.length > 0) {
    const list = unknown.rows.map((r) => `${r.n} sealed with key ${r.kid}`).join(', ');
    throw new StoredSecretsError(`Stored integration secrets do not open with SECRETS_KEY (${ring.current.id})`
      + `${ring.previous ? ` or SECRETS_KEY_PREVIOUS (${ring.previous.id})` : ''}: ${list}. `
      + 'Start with the key that sealed them (as SECRETS_KEY_PREVIOUS during a rotation).');
  }
  return { sealedPlain: plain > 0 ? await sealPlainIntegrationSecrets(db, ring) : 0 };
}
