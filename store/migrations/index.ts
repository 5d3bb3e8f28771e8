import type pg from 'pg';
import { migration as m001 } from './001-baseline';
import { migration as m002 } from './002-tool-result-bounds';
import { migration as m003 } from './003-secrets-and-logins';
import { migration as m004 } from './004-listing-indexes';
import { migration as m005 } from './005-run-change-notify';
import { migration as m006 } from './006-approvals';
import { migration as m007 } from './007-run-inputs';
import { migration as m008 } from './008-oauth';
import { migration as m009 } from './009-run-progress-notify';
import { migration as m010 } from './010-private-network-flag';
import { migration as m011 } from './011-protocol-eras';
import { migration as m012 } from './012-input-rounds';
import { migration as m013 } from './013-sampling';
import { migration as m014 } from './014-tool-tasks';
import { migration as m015 } from './015-agent-tasks';
import { migration as m016 } from './016-turn-drafts';
import { migration as m017 } from './017-run-limits';
import { migration as m018 } from './018-sub-agents';
import { migration as m019 } from './019-prompt-order';
import { migration as m020 } from './020-prompt-conditions';
import { migration as m021 } from './021-prompt-cache';
import { migration as m022 } from './022-run-versions';
import { migration as m023 } from './023-concurrent-calls';
import { migration as m024 } from './024-tenants';
import { migration as m025 } from './025-started-by';
import { migration as m026 } from './026-decided-by';
import { migration as m027 } from './027-audit';
import { migration as m028 } from './028-task-scopes';
import { migration as m029 } from './029-tenant-limits';
import { migration as m030 } from './030-file-agents-per-tenant';
import { migration as m031 } from './031-turn-costs';
import { migration as m032 } from './032-budget-requests';
import { migration as m033 } from './033-usage-indexes';
import { migration as m034 } from './034-sampling-costs';
import { migration as m035 } from './035-retry-non-idempotent';
import { migration as m036 } from './036-forks';
import { migration as m037 } from './037-caller-tools';
import { migration as m038 } from './038-replays';
import { migration as m039 } from './039-evals';
import { migration as m040 } from './040-progress-when-listened';
import { migration as m041 } from './041-events-when-listened';
import type { Migration } from './migration';

/**
 * Forward-only migrations, applied in order under an advisory lock so that several
 * workers and API processes starting at once do not race. A new migration is one new file
 * in this folder with the next version, and one line here.
 */
export const migrations: Migration[] = [
  m001,
  m002,
  m003,
  m004,
  m005,
  m006,
  m007,
  m008,
  m009,
  m010,
  m011,
  m012,
  m013,
  m014,
  m015,
  m016,
  m017,
  m018,
  m019,
  m020,
  m021,
  m022,
  m023,
  m024,
  m025,
  m026,
  m027,
  m028,
  m029,
  m030,
  m031, m032, m033, m034, m035, m036, m037, m038, m039, m040, m041,
];

const LOCK_KEY = 0x6167_656e; // "agen"

export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
