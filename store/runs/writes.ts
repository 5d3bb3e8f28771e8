import { statementName, type Queryable } from '../pool';

/**
 * How a run's records are written (store/runs/*: one file per table or seam). Every write is
 * idempotent, because activities retry. What a run records comes from an LLM and from MCP servers:
 * each write makes it storable (storable-text.ts), so that no caller can forget and odd text never
 * fails a turn or loses a result.
 */

/** One write: a statement and its values. Several go to the database as one statement (writeTogether). */
export interface Write { text: string; values: unknown[] }

/**
 * Several writes in one statement, so one round trip and one commit: all of them or none. Each is
 * a data-modifying WITH query, which PostgreSQL runs exactly once whether or not it is read.
 * The writes must not touch the same row (they see one snapshot, not each other's effects).
 */
export async function writeTogether(db: Queryable, writes: Write[]): Promise<void> {
  const { ctes, values } = asWithQueries(writes);
  const text = writes.length === 1 ? writes[0].text : `WITH ${ctes.join(', ')} SELECT 1`;
  await db.query({ text, values, name: statementName(text) });
}

/** Writes as WITH queries `w0 AS (…)`, `w1 AS (…)`, their parameters renumbered after one another's. */
export function asWithQueries(writes: Write[]): { ctes: string[]; values: unknown[] } {
  const values: unknown[] = [];
  const ctes = writes.map((w, i) => {
    const offset = values.length;
    values.push(...w.values);
    return `w${i} AS (${w.text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  return { ctes, values };
}

/**
 * A CTE for statements that write progress only (a step's start event, an attempt count): read
 * FROM it, it makes that statement's commit return without waiting for the WAL flush (for this
 * transaction alone: set_config's third argument). PostgreSQL keeps commits in order, so such a
 * write is lost only if PostgreSQL itself stops before any later commit is flushed; the step's
 * final write, flushed as usual, writes the same rows again where they are missing. Flushes are
 * half of PostgreSQL's CPU time per run on a small VM (bench:load with synchronous_commit off for
 * everything: 23 against 43 ms); these are 10 of a run's 23 commits in that benchmark.
 */
export const PROGRESS_ONLY = "progress_only AS (SELECT set_config('synchronous_commit', 'off', true))";
