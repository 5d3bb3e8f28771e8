import type { Queryable } from './pool';

/**
 * Agents and integrations may be named by their id or by their name, wherever an id is accepted
 * (API bodies, paths and filters, agent files, the CLI). This is the one place that decides:
 * an id match wins over a name match, since a name could look like another row's id.
 */

export type NamedTable = 'agents' | 'integrations';

export interface ResolvedRefs {
  /** the ids, in the order of the refs, without repeats (an id and a name of one row count once) */
  ids: string[];
  /** refs that are neither an id nor a name */
  unknown: string[];
}

/**
 * With `lockForKeyShare`, the rows found are key-share locked until the transaction ends, so that
 * they cannot be deleted before what references them is stored.
 */
export async function resolveRefs(
  db: Queryable, table: NamedTable, refs: string[], opts: { lockForKeyShare?: boolean } = {},
): Promise<ResolvedRefs> {
  if (refs.length === 0) return { ids: [], unknown: [] };
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id, name FROM ${table} WHERE id = ANY($1) OR name = ANY($1)${opts.lockForKeyShare ? ' FOR KEY SHARE' : ''}`, [refs],
  );
  const byId = new Map(rows.map((r) => [r.id, r.id]));
  const byName = new Map(rows.map((r) => [r.name, r.id]));
  const ids: string[] = [];
  const unknown: string[] = [];
  for (const ref of refs) {
    const id = byId.get(ref) ?? byName.get(ref);
    if (id === undefined) unknown.push(ref);
    else if (!ids.includes(id)) ids.push(id);
  }
  return { ids, unknown };
}

/** The id of the row named `ref` (by id or name), or undefined. */
export async function resolveRef(db: Queryable, table: NamedTable, ref: string): Promise<string | undefined> {
  return (await resolveRefs(db, table, [ref])).ids[0];
}
