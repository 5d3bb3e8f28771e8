import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';
import { MAX_IDENTIFIER_BYTES, quoteIdent, sanitiseName } from '../csv/columns';
import type { Db, Queryable } from '../../store/pool';
import { oncePerPool } from '../../store/pool';

/**
 * A thread's statements run on a connection logged in as the thread's own login role, never on the
 * engine's. That role is NOINHERIT, owns nothing, is granted nothing, and is a member of exactly one
 * role: the thread's reader. So whatever a statement does to the role (set_config('role', …),
 * RESET ROLE, SET ROLE to another thread's reader) it ends up as the reader or as a role that can
 * read nothing, and SET SESSION AUTHORIZATION needs a superuser login, which this is not.
 */
export const THREAD_LOGIN_PREFIX = 'dsqlogin_';

export const threadLoginName = (threadId: string) =>
  `${THREAD_LOGIN_PREFIX}${sanitiseName(threadId, 'thread')}`.slice(0, MAX_IDENTIFIER_BYTES);

/** Sessions one thread may hold at once (a run's parallel source_query calls). */
const CONNECTION_LIMIT = 16;

/**
 * The passwords are derived: HMAC of the role name under a random secret that this database keeps
 * in a table only the engine's own user can read. Every engine process sharing the database derives
 * the same password, and nothing per thread is stored. The role gets a SCRAM verifier computed
 * here, so the password itself never reaches the server's statement log.
 */
const loginSecret = oncePerPool(async (db): Promise<Buffer> => {
  await db.query('INSERT INTO source_query_login_secret (secret) VALUES ($1) ON CONFLICT DO NOTHING', [randomBytes(32).toString('base64')]);
  const { rows } = await db.query<{ secret: string }>('SELECT secret FROM source_query_login_secret');
  return Buffer.from(rows[0].secret, 'base64');
});

export async function threadLoginPassword(db: Db, login: string): Promise<string> {
  return createHmac('sha256', await loginSecret(db)).update(`source-query-login:${login}`).digest('base64url');
}

/** The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802, as pg's scram-common.c builds it). */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

const DUPLICATE = new Set(['42710', '23505']);

/** The role's password clause; computed before the caller takes a connection (the pool may hold just one). */
export async function loginPasswordClause(db: Db, login: string): Promise<string> {
  // The verifier holds only base64 and "$:", so it is safe inside a literal.
  return `PASSWORD '${scramVerifier(await threadLoginPassword(db, login))}'`;
}

/**
 * Inside the caller's transaction: creates the login role (or sets its password again) and makes
 * it a member of the reader. Idempotent; a racing creator is tolerated.
 */
export async function ensureThreadLogin(tx: Queryable, login: string, reader: string, password: string): Promise<void> {
  const l = quoteIdent(login);
  const exists = await tx.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [login]);
  if (exists.rowCount === 0) {
    await tx.query('SAVEPOINT create_login');
    try {
      await tx.query(`CREATE ROLE ${l} LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS `
        + `CONNECTION LIMIT ${CONNECTION_LIMIT} ${password}`);
    } catch (err) {
      if (!DUPLICATE.has((err as { code?: string }).code ?? '')) throw err;
      await tx.query('ROLLBACK TO SAVEPOINT create_login');
    }
  } else {
    await tx.query(`ALTER ROLE ${l} ${password}`);
  }
  const version = Number((await tx.query<{ v: string }>('SHOW server_version_num')).rows[0].v);
  // The login may SET ROLE to the reader and inherits nothing from it; the attribute NOINHERIT says the same before 16.
  const grant = `GRANT ${quoteIdent(reader)} TO ${l}`;
  await tx.query(version >= 160000 ? `${grant} WITH INHERIT FALSE, SET TRUE` : grant);
}

/** Sets the derived password again (after the login secret or the role changed under us). */
async function resetThreadLoginPassword(db: Db, login: string): Promise<void> {
  await db.query(`ALTER ROLE ${quoteIdent(login)} ${await loginPasswordClause(db, login)}`);
}

/** The engine's own connection settings, with the thread login's name and password instead. */
function loginConfig(db: Db, login: string, password: string): pg.ClientConfig {
  const base = db.options;
  const common = { connectionTimeoutMillis: 10_000, application_name: 'source_query' };
  if (base.connectionString) {
    const url = new URL(base.connectionString);
    url.username = encodeURIComponent(login);
    url.password = encodeURIComponent(password);
    return { ...common, connectionString: url.toString() };
  }
  return { ...base, ...common, user: login, password };
}

/** invalid_password, or invalid_authorization_specification (no such role yet, or pg_hba refusal) */
const AUTH_FAILED = new Set(['28P01', '28000']);

export class ThreadLoginError extends Error {
  override name = 'ThreadLoginError';
}

/**
 * A fresh connection logged in as the thread's login role; the caller ends it. A connection per
 * statement: no pooled session can carry one statement's leftovers to the next.
 */
export async function connectThreadLogin(db: Db, login: string): Promise<pg.Client> {
  for (let attempt = 0; ; attempt += 1) {
    const client = new pg.Client(loginConfig(db, login, await threadLoginPassword(db, login)));
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (!AUTH_FAILED.has((err as { code?: string }).code ?? '')) throw err;
      if (attempt > 0) {
        throw new ThreadLoginError(`cannot log in as the thread's role ${login} (${(err as Error).message}); `
          + `the database must accept password logins (scram-sha-256) for roles named ${THREAD_LOGIN_PREFIX}* from the workers`);
      }
      await resetThreadLoginPassword(db, login);
    }
  }
}
