import type { Queryable } from './pool';

/**
 * Which run an MCP client's request started, per Mcp-Session-Id (mcp_calls): the cancel
 * notification may reach another API process than the call, so the pairing lives here.
 */

/** Records the call's run; true when a cancel for the request came first. */
export async function pairCallWithRun(db: Queryable, sessionId: string, requestId: string, runId: string): Promise<boolean> {
  const { rows } = await db.query<{ cancel_requested: boolean }>(
    `INSERT INTO mcp_calls (session_id, request_id, run_id) VALUES ($1, $2, $3)
     ON CONFLICT (session_id, request_id) DO UPDATE SET run_id = EXCLUDED.run_id RETURNING cancel_requested`,
    [sessionId, requestId, runId],
  );
  // Old pairings are of no use: clients cancel within the call. Pruned here, so no job is needed.
  await db.query("DELETE FROM mcp_calls WHERE created_at < now() - interval '1 day'");
  return rows[0].cancel_requested;
}

/** Marks the request cancelled; the run to cancel, when it has started. */
export async function markCallCancelled(db: Queryable, sessionId: string, requestId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ run_id: string | null }>(
    `INSERT INTO mcp_calls (session_id, request_id, cancel_requested) VALUES ($1, $2, true)
     ON CONFLICT (session_id, request_id) DO UPDATE SET cancel_requested = true RETURNING run_id`,
    [sessionId, requestId],
  );
  return rows[0].run_id ?? undefined;
}
