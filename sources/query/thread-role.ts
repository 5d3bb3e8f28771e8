import { MAX_IDENTIFIER_BYTES, quoteIdent, sanitiseName } from '../csv/columns';
import { threadSchemaName } from '../csv/import-csv';
import { canLimitTempFiles, TEMP_FILE_LIMIT, TEMP_FILE_LIMIT_SETTING } from './temp-file-limit';
import { ensureThreadLogin, loginPasswordClause, threadLoginName } from './thread-login';
import { oncePerPool, type Db } from '../../store/pool';

/**
 * Each thread's source_query runs as its own reader role, which may read its thread's schema and
 * nothing else, on a connection logged in as the thread's login role (see thread-login.ts). Roles
 * are cluster-wide, hence the prefixes: an operator can list (and a test can drop) ours.
 */
export const THREAD_ROLE_PREFIX = 'dsq_';

export const threadRoleName = (threadId: string) =>
  `${THREAD_ROLE_PREFIX}${sanitiseName(threadId, 'thread')}`.slice(0, MAX_IDENTIFIER_BYTES);

export type SourceQuerySupport = { enabled: true } | { enabled: false; reason: string };

export const ROLES_UNAVAILABLE =
  'source_query is disabled: the database user cannot create roles (it needs CREATEROLE or superuser), '
  + 'so queries cannot be isolated per thread';

/** Whether this database user can isolate threads; asked once per pool (the answer changes only with an ALTER ROLE). */
export const sourceQuerySupport = oncePerPool((db) => db
  .query<{ can: boolean }>('SELECT rolsuper OR rolcreaterole AS can FROM pg_roles WHERE rolname = current_user')
  .then(({ rows }): SourceQuerySupport => (rows[0]?.can ? { enabled: true } : { enabled: false, reason: ROLES_UNAVAILABLE })));

const DUPLICATE = new Set(['42710', '23505']);
const LOCK_TIMEOUT_MS = 10_000;

/**
 * Creates the thread's schema and role if needed: idempotent, and safe when two runs or workers
 * race (the same advisory lock as the CSV import, so the schema's grants and an import never interleave).
 * Default privileges make every table the engine later creates in the schema readable by the role,
 * including a re-imported table, which is a new table renamed into place.
 */
export interface ThreadTarget {
  /** the reader role the statement runs as */
  role: string;
  schema: string;
  /** the login role of the statement's connection, a member of `role` alone */
  login: string;
}

export async function ensureThreadRole(db: Db, threadId: string): Promise<ThreadTarget> {
  const role = threadRoleName(threadId);
  const schema = threadSchemaName(threadId);
  const login = threadLoginName(threadId);
  const limitTempFiles = await canLimitTempFiles(db);
  // The usual case, one cheap query. CASE keeps the privilege functions from erroring on a missing role or schema.
  // A login made before its temp_file_limit was set (or before the engine could set it) is set up again.
  const ready = await db.query<{ ready: boolean }>(
    `SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AND EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $2)
         AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $3)
       THEN has_schema_privilege($1::text, $2::text, 'USAGE') AND pg_has_role($3::text, $1::text, 'MEMBER')
         AND (NOT $4 OR EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_roles l ON l.oid = s.setrole
           WHERE l.rolname = $3 AND s.setdatabase = 0 AND $5 = ANY (s.setconfig)))
       ELSE false END AS ready`,
    [role, schema, login, limitTempFiles, TEMP_FILE_LIMIT_SETTING],
  );
  if (ready.rows[0]?.ready) return { role, schema, login };

  const password = await loginPasswordClause(db, login);
  const client = await db.connect();
  try {
    // A running CSV import of this thread holds the lock for minutes: give up rather than outlast the activity.
    await client.query(`BEGIN; SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`data-sources:${threadId}`]);
    const r = quoteIdent(role);
    const s = quoteIdent(schema);
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    if (exists.rowCount === 0) {
      await client.query('SAVEPOINT create_role');
      try {
        await client.query(`CREATE ROLE ${r} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS`);
      } catch (err) {
        // Roles are cluster-wide: another database's engine (or a racing worker) may have made it.
        if (!DUPLICATE.has((err as { code?: string }).code ?? '')) throw err;
        await client.query('ROLLBACK TO SAVEPOINT create_role');
      }
    }
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`GRANT USAGE ON SCHEMA ${s} TO ${r}`);
    await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${s} TO ${r}`);
    await client.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT SELECT ON TABLES TO ${r}`);
    await ensureThreadLogin(client, login, role, password);
    if (limitTempFiles) await client.query(`ALTER ROLE ${quoteIdent(login)} SET temp_file_limit = '${TEMP_FILE_LIMIT}'`);
    await client.query('COMMIT');
    return { role, schema, login };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Removes a thread's roles and what was granted to them (tests; deleting a thread). The schema is dropped too. */
export async function dropThreadRole(db: Db, threadId: string): Promise<void> {
  const role = threadRoleName(threadId);
  const schema = threadSchemaName(threadId);
  // The login owns nothing and was granted nothing but its membership, which goes with it.
  await db.query(`DROP ROLE IF EXISTS ${quoteIdent(threadLoginName(threadId))}`);
  const exists = await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
  await db.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  if (exists.rowCount === 0) return;
  // DROP OWNED revokes the role's grants and default privileges in this database, which DROP ROLE requires.
  await db.query(`DROP OWNED BY ${quoteIdent(role)}`);
  await db.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`);
}
