import type { ForkedFrom } from '../../core/fork';
import type { Usage } from '../../core/messages';
import type { ReplayOf, ReplayTools } from '../../core/replay';
import type { WorkerVersion } from '../../core/worker-version';
import { statementName, type Queryable } from '../pool';
import { MESSAGE_PREVIEW_CHARS } from '../threads/thread-messages';
import { type RunResult } from './results';
import { TOOL_CALLS_JSON, type ToolCallRecord } from './tool-calls';
import type { StartedBy } from './runs';

/** What the API shows of a run, read in one round trip: its result once ended, its progress while it runs. */
export interface StoredRun {
  id: string;
  threadId: string;
  agentId: string;
  createdAt: string;
  /** who started it (a sub-agent's run: who started its root); null for runs started before migration 25 */
  startedBy: StartedBy | null;
  /** a sub-agent's run: the run and the tool call that started it */
  parent?: { runId: string; toolCallId: string };
  /** a fork: the run and the turn it was forked from (migration 36) */
  forkedFrom?: ForkedFrom;
  /** a replay: the run it replays, and where its calls' results come from (migration 38) */
  replayOf?: ReplayOf;
  /** a replay an eval started (migration 39) */
  evalId?: string;
  /** the Worker Deployment build its last turn ran on (a versioned worker's; absent: unversioned) */
  version?: WorkerVersion;
  /** the prompt prefix's tokens, once preparation counted them (run_started) */
  prefix?: { tokens: number; tokensEstimated: boolean };
  /** the write-once outcome; absent while the run runs */
  result?: RunResult;
  /** while the run runs: completed LLM turns, their usage, and the tool calls that have ended */
  progress?: { turns: number; usage: Usage; toolCalls: Omit<ToolCallRecord, 'slot'>[] };
  /** the arguments of its tool calls by call id, as JSON text cut at MESSAGE_PREVIEW_CHARS characters */
  toolCallArguments: Map<string, { arguments: string; argumentsBytes: number }>;
  /** whether an approval or a question to a person may be pending (then worth reading; usually not) */
  mayWait: { approvals: boolean; inputs: boolean; children?: boolean; budget?: boolean; callerTools?: boolean };
  /** what its completed LLM turns cost (core/pricing.ts), and with its sub-agents' runs' */
  cost?: RunCost;
  costWithChildren?: RunCost;
}

/** A sum of turns' costs in USD; `priced` false when a turn's model had no price (its cost is not in `usd`). */
export interface RunCost {
  usd: number;
  priced: boolean;
}

/** The columns a query of costs returns: its own turns', and its sub-agent runs' (the tree below). */
export interface CostColumns {
  cost_usd: string | null; cost_priced: boolean | null; tree_cost_usd: string | null; tree_cost_priced: boolean | null;
}

interface StoredRunRow extends CostColumns {
  id: string; thread_id: string; agent_id: string; created_at: Date; parent_run_id: string | null; parent_tool_call_id: string | null;
  deployment_name: string | null; build_id: string | null; started_by: StartedBy | null;
  forked_from_run_id: string | null; forked_from_turn: number | null;
  replay_of_run_id: string | null; replay_tools: ReplayTools | null; eval_id: string | null;
  rr_thread_id: string | null; rr_agent_id: string | null; status: RunResult['status'] | null; stop_reason: string | null;
  limit_reached: string | null; output: string | null; error: RunResult['error']; turns: number | null; usage: Usage | null;
  usage_with_children: Usage | null; tool_calls: RunResult['toolCalls'] | null;
  rr_created_at: Date | null; ended_at: Date | null;
  live_turns: number | null; live_input_tokens: number | null; live_output_tokens: number | null;
  live_tool_calls: RunResult['toolCalls'] | null;
  arguments: { id: string; arguments: string | null; bytes: number | null }[] | null;
  pending_approvals: boolean; pending_inputs: boolean; running_children: boolean; pending_budget: boolean; pending_callers: boolean;
  prefix: { tokens?: number; tokensEstimated?: boolean } | null;
}

// The progress sub-queries only run for a run without a result (rr.run_id IS NULL in their WHERE).
// The whole run object is one statement: under load, a GET that misses the API's cache costs one
// pooled connection and one round trip; the pending rows are read apart only when the flags say so.
// Prepared (named): its plan is made once per connection, not at every GET.
const STORED_RUN_SQL = `
SELECT r.id, r.thread_id, r.agent_id, r.created_at, r.parent_run_id, r.parent_tool_call_id, r.deployment_name, r.build_id, r.started_by,
  r.forked_from_run_id, r.forked_from_turn,
  r.replay_of_run_id, r.replay_tools, r.eval_id,
  rr.thread_id AS rr_thread_id, rr.agent_id AS rr_agent_id, rr.status, rr.stop_reason, rr.limit_reached, rr.output, rr.error, rr.turns,
  rr.usage, rr.usage_with_children, rr.tool_calls, rr.created_at AS rr_created_at, rr.ended_at,
  t.live_turns, t.live_input_tokens + su.input_tokens AS live_input_tokens, t.live_output_tokens + su.output_tokens AS live_output_tokens,
  tc.live_tool_calls, a.arguments,
  (SELECT e.data->'prefix' FROM run_events e WHERE e.run_id = r.id AND e.seq = 1) AS prefix,
  rr.run_id IS NULL AND (EXISTS (SELECT 1 FROM run_approvals WHERE run_id = r.id AND status = 'pending')
    OR EXISTS (SELECT 1 FROM run_samplings WHERE run_id = r.id AND status = 'pending' AND needs_approval)) AS pending_approvals,
  rr.run_id IS NULL AND EXISTS (SELECT 1 FROM run_inputs WHERE run_id = r.id AND status = 'pending') AS pending_inputs,
  rr.run_id IS NULL AND EXISTS (SELECT 1 FROM run_budget_requests WHERE run_id = r.id AND status = 'pending') AS pending_budget,
  rr.run_id IS NULL AND EXISTS (SELECT 1 FROM run_caller_tool_calls WHERE run_id = r.id AND status = 'pending') AS pending_callers,
  rr.run_id IS NULL AND EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.id
    AND NOT EXISTS (SELECT 1 FROM run_results cr WHERE cr.run_id = c.id)) AS running_children,
  cost.usd AS cost_usd, cost.priced AS cost_priced, tree_cost.usd AS tree_cost_usd, tree_cost.priced AS tree_cost_priced
FROM runs r
LEFT JOIN run_results rr ON rr.run_id = r.id
LEFT JOIN LATERAL (
  SELECT count(*) FILTER (WHERE completed_at IS NOT NULL)::int AS live_turns,
    coalesce(sum(input_tokens), 0)::int AS live_input_tokens, coalesce(sum(output_tokens), 0)::int AS live_output_tokens
  FROM run_turns WHERE run_id = r.id AND rr.run_id IS NULL
) t ON true
-- The model's answers to MCP servers' sampling requests count in the run's usage too.
LEFT JOIN LATERAL (
  SELECT coalesce(sum((usage->>'inputTokens')::int), 0)::int AS input_tokens,
    coalesce(sum((usage->>'outputTokens')::int), 0)::int AS output_tokens
  FROM run_samplings WHERE run_id = r.id AND rr.run_id IS NULL AND usage IS NOT NULL
) su ON true
LEFT JOIN LATERAL (
  SELECT ${TOOL_CALLS_JSON} AS live_tool_calls
  FROM run_tool_calls WHERE run_id = r.id AND rr.run_id IS NULL
) tc ON true
LEFT JOIN LATERAL (
  SELECT json_agg(json_build_object(
    'id', c->>'id', 'arguments', left((c->'arguments')::text, $2), 'bytes', octet_length((c->'arguments')::text)
  )) AS arguments
  FROM run_messages m,
    jsonb_array_elements(CASE WHEN jsonb_typeof(m.message->'toolCalls') = 'array' THEN m.message->'toolCalls' ELSE '[]' END) AS c
  WHERE m.run_id = r.id AND m.slot = 0
) a ON true
-- A turn's cost was computed when it ended (migration 31), a sampling answer's when it was given
-- (migration 34); one without a cost was not priced.
LEFT JOIN LATERAL (
  SELECT coalesce(sum(c.cost_usd), 0)::text AS usd, bool_and(c.cost_usd IS NOT NULL) AS priced FROM (
    SELECT cost_usd FROM run_turns WHERE run_id = r.id AND completed_at IS NOT NULL
    UNION ALL SELECT cost_usd FROM run_samplings WHERE run_id = r.id AND status = 'answered') c
) cost ON true
LEFT JOIN LATERAL (
  WITH RECURSIVE tree AS (
    SELECT c.id FROM runs c WHERE c.parent_run_id = r.id
    UNION ALL SELECT c.id FROM runs c JOIN tree ON c.parent_run_id = tree.id)
  SELECT coalesce(sum(c.cost_usd), 0)::text AS usd, bool_and(c.cost_usd IS NOT NULL) AS priced FROM (
    SELECT t.cost_usd FROM run_turns t WHERE t.run_id IN (SELECT id FROM tree) AND t.completed_at IS NOT NULL
    UNION ALL SELECT s.cost_usd FROM run_samplings s WHERE s.run_id IN (SELECT id FROM tree) AND s.status = 'answered') c
) tree_cost ON true
WHERE r.id = $1 AND ($3::text IS NULL OR r.tenant_id = $3)`;

/** The run object's facts; given a tenant, only if the run is that tenant's (another tenant's run reads as no run). */
export async function findStoredRun(db: Queryable, runId: string, tenantId?: string): Promise<StoredRun | undefined> {
  const { rows } = await db.query<StoredRunRow>({
    name: statementName(STORED_RUN_SQL), text: STORED_RUN_SQL, values: [runId, MESSAGE_PREVIEW_CHARS, tenantId ?? null],
  });
  const r = rows[0];
  if (!r) return undefined;
  const base = {
    id: r.id, threadId: r.thread_id, agentId: r.agent_id, createdAt: r.created_at.toISOString(), startedBy: r.started_by ?? null,
    ...(r.parent_run_id ? { parent: { runId: r.parent_run_id, toolCallId: r.parent_tool_call_id ?? '' } } : {}),
    ...(r.forked_from_run_id ? { forkedFrom: { runId: r.forked_from_run_id, turn: r.forked_from_turn ?? 1 } } : {}),
    ...(r.replay_of_run_id ? { replayOf: { runId: r.replay_of_run_id, tools: r.replay_tools ?? 'recorded' } } : {}),
    ...(r.eval_id ? { evalId: r.eval_id } : {}),
    ...(r.deployment_name && r.build_id ? { version: { deploymentName: r.deployment_name, buildId: r.build_id } } : {}),
    ...(typeof r.prefix?.tokens === 'number'
      ? { prefix: { tokens: r.prefix.tokens, tokensEstimated: r.prefix.tokensEstimated === true } }
      : {}),
    toolCallArguments: new Map((r.arguments ?? []).map((c) => [c.id, { arguments: c.arguments ?? '{}', argumentsBytes: c.bytes ?? 2 }])),
    mayWait: {
      approvals: r.pending_approvals, inputs: r.pending_inputs,
      ...(r.running_children ? { children: true } : {}), ...(r.pending_budget ? { budget: true } : {}),
      ...(r.pending_callers ? { callerTools: true } : {}),
    },
    ...costsOf(r),
  };
  if (r.status && r.ended_at && r.rr_created_at) {
    return {
      ...base,
      result: {
        runId: r.id, threadId: r.rr_thread_id ?? r.thread_id, agentId: r.rr_agent_id ?? r.agent_id, status: r.status,
        stopReason: r.stop_reason, limitReached: r.limit_reached, output: r.output, error: r.error, turns: r.turns ?? 0,
        usage: r.usage ?? { inputTokens: 0, outputTokens: 0 }, usageWithChildren: r.usage_with_children, toolCalls: r.tool_calls ?? [],
        createdAt: r.rr_created_at.toISOString(), endedAt: r.ended_at.toISOString(),
      },
    };
  }
  return {
    ...base,
    progress: {
      turns: r.live_turns ?? 0,
      usage: { inputTokens: r.live_input_tokens ?? 0, outputTokens: r.live_output_tokens ?? 0 },
      toolCalls: r.live_tool_calls ?? [],
    },
  };
}

/** Costs as their sum columns read: own, and with sub-agents' runs' (no turn: nothing spent, which is priced). */
export function costsOf(r: CostColumns): { cost: RunCost; costWithChildren: RunCost } {
  const own = { usd: Number(r.cost_usd ?? 0), priced: r.cost_priced ?? true };
  const children = { usd: Number(r.tree_cost_usd ?? 0), priced: r.tree_cost_priced ?? true };
  return { cost: own, costWithChildren: { usd: own.usd + children.usd, priced: own.priced && children.priced } };
}

/** A run's sub-agent runs still running, oldest first. */
export async function runningChildRuns(db: Queryable, runId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id FROM runs c WHERE c.parent_run_id = $1 AND NOT EXISTS (SELECT 1 FROM run_results cr WHERE cr.run_id = c.id)
     ORDER BY c.created_at, c.id`, [runId]);
  return rows.map((r) => r.id);
}
