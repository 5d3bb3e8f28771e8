import { oncePerPool } from '../../store/pool';

/**
 * A source_query may make PostgreSQL write temporary files (a big sort, a set-returning function
 * that spills): `select * from generate_series(1, 1e10)` wrote a gigabyte in 15 s, four at a time per
 * worker. temp_file_limit bounds that per statement, but only a superuser (or, on PostgreSQL 15+, a
 * user granted SET on the parameter) may set it, so it is set on each thread's login role, where it
 * applies from the login on, and a statement cannot raise it.
 */
export const TEMP_FILE_LIMIT = '256MB';
/** How pg_db_role_setting records it. */
export const TEMP_FILE_LIMIT_SETTING = `temp_file_limit=${TEMP_FILE_LIMIT}`;

export const TEMP_FILES_UNLIMITED =
  "source_query's temporary files are not limited: the database user may not set temp_file_limit on the thread logins "
  + '(it needs superuser, or on PostgreSQL 15+: GRANT SET ON PARAMETER temp_file_limit TO <the engine\'s user>)';

/** Whether this database user may set temp_file_limit on other roles; asked once per pool. */
export const canLimitTempFiles = oncePerPool(async (db): Promise<boolean> => {
  const { rows } = await db.query<{ superuser: boolean; version: number }>(
    "SELECT rolsuper AS superuser, current_setting('server_version_num')::int AS version FROM pg_roles WHERE rolname = current_user",
  );
  if (rows[0]?.superuser) return true;
  if ((rows[0]?.version ?? 0) < 150000) return false;
  const granted = await db.query<{ can: boolean }>("SELECT has_parameter_privilege('temp_file_limit', 'SET') AS can");
  return granted.rows[0]?.can === true;
});
