import pg from 'pg';

/**
 * A database of a test file's own on the external PostgreSQL (EXTERNAL_DATABASE_URL's server, as
 * global setup uses it), for a file whose writes other files must not see, or which must not see
 * theirs. `create` makes it; `drop` ends its connections and drops it.
 */
export interface OwnDatabase { name: string; url: string; create(): Promise<void>; drop(): Promise<void> }

export function ownDatabase(prefix: string): OwnDatabase {
  const adminUrl = process.env.EXTERNAL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}`;
  const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  };
  return {
    name, url,
    create: () => admin(`CREATE DATABASE ${name}`),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
