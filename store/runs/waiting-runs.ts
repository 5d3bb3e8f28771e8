import { WAITING_FOR_VALUES } from '../../core/search-attributes';
import { statementName, type Queryable } from '../pool';

/**
 * Runs waiting for a person now, by what they wait for, as their `waitingFor` search attribute
 * says it (core/search-attributes.ts): `approval` (a tool call waits for a decision) wins over
 * `input` (an MCP server's question, or its sampling request waiting for a reviewer), which wins over
 * `budget` (a reached limit waits for a person: limits.onLimit "ask"), which wins over `caller_tool` (a
 * call of a tool its caller runs waits for the caller's answer). Each run is
 * counted once; a run with a result waits for nobody. Read from the rows the API reads pending
 * approvals and questions from, never from Temporal: a metric's scrape must not cost a visibility query.
 */
const WAITING_RUNS_SQL = `
SELECT waiting_for, count(*)::int AS runs FROM (
  SELECT DISTINCT ON (w.run_id) w.run_id, w.waiting_for FROM (
    SELECT run_id, 'approval' AS waiting_for, 0 AS rank FROM run_approvals WHERE status = 'pending'
    UNION ALL
    SELECT i.run_id, 'input', 1 FROM run_inputs i WHERE i.status = 'pending' AND i.expires_at > now()
      AND NOT EXISTS (SELECT 1 FROM run_tool_calls c WHERE c.run_id = i.run_id AND c.tool_call_id = i.tool_call_id)
    UNION ALL
    SELECT s.run_id, 'input', 1 FROM run_samplings s WHERE s.status = 'pending' AND s.needs_approval AND s.expires_at > now()
      AND NOT EXISTS (SELECT 1 FROM run_tool_calls c WHERE c.run_id = s.run_id AND c.tool_call_id = s.tool_call_id)
    UNION ALL
    SELECT run_id, 'budget', 2 FROM run_budget_requests WHERE status = 'pending'
    UNION ALL
    SELECT run_id, 'caller_tool', 3 FROM run_caller_tool_calls WHERE status = 'pending'
  ) w
  WHERE NOT EXISTS (SELECT 1 FROM run_results rr WHERE rr.run_id = w.run_id)
  ORDER BY w.run_id, w.rank
) waiting GROUP BY waiting_for`;

/** How many runs wait for each kind of answer; every kind is present, 0 when no run waits for it. */
export async function countWaitingRuns(db: Queryable): Promise<Record<string, number>> {
  const { rows } = await db.query<{ waiting_for: string; runs: number }>({
    name: statementName(WAITING_RUNS_SQL), text: WAITING_RUNS_SQL, values: [],
  });
  const counts: Record<string, number> = Object.fromEntries(WAITING_FOR_VALUES.map((v) => [v, 0]));
  for (const row of rows) counts[row.waiting_for] = row.runs;
  return counts;
}
