import type { Queryable } from './pool';

/**
 * Agents and integrations may be named by their id or by their name, wherever an id is accepted
 * (API bodies, paths and filters, agent files, the CLI). This is the one place that decides:
 * an id match wins over a name match, since a name could look like another row's id. Names are
 * unique per tenant, and a lookup sees only one tenant's rows: another tenant's id or name is unknown.
 */

export type NamedTable = 'agents' | 'integrations';

/**
 * The rule, as SQL: the row of `table` in the tenant `tenant` whose id is `ref`, else the one whose
 * name is `ref` (`ref` and `tenant` are SQL expressions, such as parameters). Every lookup by id or
 * name goes through it.
 */
export const rowByRef = (table: NamedTable, ref: string, tenant: string, columns = '*', lock = '') =>
  `(SELECT ${columns} FROM ${table} WHERE tenant_id = ${tenant} AND (id = ${ref} OR name = ${ref})`
  + ` ORDER BY id = ${ref} DESC LIMIT 1${lock})`;

export interface ResolvedRefs {
  /** the ids, in the order of the refs, without repeats (an id and a name of one row count once) */
  ids: string[];
  /** refs that are neither an id nor a name in the tenant */
  unknown: string[];
}

/**
 * The id each ref names in the tenant, in the order of the refs (null: neither an id nor a name
 * there); with `lockForKeyShare`, see resolveRefs.
 */
export async function idsOfRefs(
  db: Queryable, table: NamedTable, tenantId: string, refs: string[], opts: { lockForKeyShare?: boolean } = {},
): Promise<(string | null)[]> {
  if (refs.length === 0) return [];
  const { rows } = await db.query<{ id: string | null }>(
    `SELECT ${rowByRef(table, 'r.ref', '$2', 'id', opts.lockForKeyShare ? ' FOR KEY SHARE' : '')} AS id
     FROM unnest($1::text[]) WITH ORDINALITY AS r(ref, n) ORDER BY r.n`, [refs, tenantId],
  );
  return rows.map((r) => r.id);
}

/**
 * With `lockForKeyShare`, the rows found are key-share locked until the transaction ends, so that
 * they cannot be deleted before what references them is stored.
 */
export async function resolveRefs(
  db: Queryable, table: NamedTable, tenantId: string, refs: string[], opts: { lockForKeyShare?: boolean } = {},
): Promise<ResolvedRefs> {
  const found = await idsOfRefs(db, table, tenantId, refs, opts);
  const ids: string[] = [];
  const unknown: string[] = [];
  found.forEach((id, i) => {
    if (id === null) unknown.push(refs[i]);
    else if (!ids.includes(id)) ids.push(id);
  });
  return { ids, unknown };
}

/** The id of the tenant's row named `ref` (by id or name), or undefined. */
export async function resolveRef(db: Queryable, table: NamedTable, tenantId: string, ref: string): Promise<string | undefined> {
  return (await resolveRefs(db, table, tenantId, [ref])).ids[0];
}
