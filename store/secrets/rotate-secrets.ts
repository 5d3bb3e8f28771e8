import type { Db } from '../pool';
import { integrationOAuthContext } from '../integrations/oauth';
import { oauthStateContext } from '../integrations/oauth-states';
import { integrationSecretsContext, sealPlainIntegrationSecrets } from '../integrations/secrets';
import { isSealed, reseal, SecretsKeyError, type KeyRing } from '../../platform/secrets/secret-box';

/**
 * Every column that holds sealed values, with the context each value is bound to. A new kind of
 * stored secret (OAuth tokens) adds its column here, and rotation covers it.
 */
export const SEALED_COLUMNS = [
  { table: 'integrations', column: 'secrets', context: integrationSecretsContext },
  { table: 'integration_oauth', column: 'sealed', context: integrationOAuthContext },
  { table: 'oauth_states', column: 'sealed', context: oauthStateContext },
] as const;

export interface RotationReport {
  /** plain-text rows sealed on the way */
  sealedPlain: number;
  /** rows sealed again with the current key */
  resealed: number;
  /** rows still under another key at the end: written meanwhile by a process that runs with the old key */
  remaining: number;
}

const BATCH = 100;

/**
 * Seals every stored secret with the current key, one row per transaction, in id order. Rows
 * already under the current key are left alone, so a second run does nothing and a run after a
 * crash picks up where the first stopped: at every moment each row is under the old key or the
 * new one, and processes holding both (SECRETS_KEY_PREVIOUS) read either.
 */
export async function rotateSecrets(db: Db, ring: KeyRing, onRow: (line: string) => void = () => {}): Promise<RotationReport> {
  const current = ring.current;
  if (!current) throw new SecretsKeyError('SECRETS_KEY (the new key) must be set to rotate; SECRETS_KEY_PREVIOUS holds the old one');
  const report: RotationReport = { sealedPlain: await sealPlainIntegrationSecrets(db, ring), resealed: 0, remaining: 0 };
  for (const { table, column, context } of SEALED_COLUMNS) {
    const stale = `${column} IS NOT NULL AND ${column}->>'kid' IS DISTINCT FROM $1`;
    let after = '';
    for (;;) {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM ${table} WHERE ${stale} AND id > $2 ORDER BY id LIMIT ${BATCH}`, [current.id, after]);
      if (rows.length === 0) break;
      for (const { id } of rows) {
        if (await resealRow(db, ring, table, column, id, context(id))) {
          report.resealed += 1;
          onRow(`${table} ${id}: sealed with key ${current.id}`);
        }
        after = id;
      }
    }
    const left = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${stale}`, [current.id]);
    report.remaining += left.rows[0].n;
  }
  return report;
}

async function resealRow(db: Db, ring: KeyRing, table: string, column: string, id: string, context: string): Promise<boolean> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    // The row lock makes a concurrent PATCH wait, or this wait for it; either way the newer value wins.
    const { rows } = await client.query<{ sealed: unknown }>(`SELECT ${column} AS sealed FROM ${table} WHERE id = $1 FOR UPDATE`, [id]);
    const sealed = rows[0]?.sealed;
    const next = isSealed(sealed) ? reseal(ring, sealed, context) : undefined;
    if (next) await client.query(`UPDATE ${table} SET ${column} = $2 WHERE id = $1`, [id, JSON.stringify(next)]);
    await client.query('COMMIT');
    return next !== undefined;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Sealed values (beyond integration env and headers, which prepareIntegrationSecrets reports in
 * detail) that no key of the ring opens: OAuth tokens and authorizations in progress.
 */
export async function unopenableSecrets(db: Db, ring: KeyRing): Promise<string[]> {
  const known = [ring.current?.id, ring.previous?.id].filter((k): k is string => Boolean(k));
  const found: string[] = [];
  for (const { table, column } of SEALED_COLUMNS.filter((c) => c.table !== 'integrations')) {
    const { rows } = await db.query<{ kid: string; n: number }>(
      `SELECT ${column}->>'kid' AS kid, count(*)::int AS n FROM ${table}
       WHERE ${column} IS NOT NULL AND NOT (${column}->>'kid' = ANY($1)) GROUP BY 1 ORDER BY 1`, [known]);
    for (const r of rows) found.push(`${r.n} in ${table} sealed with key ${r.kid}`);
  }
  return found;
}
