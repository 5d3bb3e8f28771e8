import type { Usage } from '../../core/messages';
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
  mayWait: { approvals: boolean; inputs: boolean; children?: boolean };
}

interface StoredRunRow {
  id: string; thread_id: string; agent_id: string; created_at: Date; parent_run_id: string | null; parent_tool_call_id: string | null;
  deployment_name: string | null; build_id: string | null; started_by: StartedBy | null;
  rr_thread_id: string | null; rr_agent_id: string | null; status: RunResult['status'] | null; stop_reason: string | null;
  limit_reached: string | null; output: string | null; error: RunResult['error']; turns: number | null; usage: Usage | null;
  usage_with_children: Usage | null; tool_calls: RunResult['toolCalls'] | null;
  rr_created_at: Date | null; ended_at: Date | null;
  live_turns: number | null; live_input_tokens: number | null; live_output_tokens: number | null;
  live_tool_calls: RunResult['toolCalls'] | null;
  arguments: { id: string; arguments: string | null; bytes: number | null }[] | null;
  pending_approvals: boolean; pending_inputs: boolean; running_children: boolean;
  prefix: { tokens?: number; tokensEstimated?: boolean } | null;
}

// The progress sub-queries only run for a run without a result (rr.run_id IS NULL in their WHERE).
// The whole run object is one statement: under load, a GET that misses the API's cache costs one
// pooled connection and one round trip; the pending rows are read apart only when the flags say so.
// Prepared (named): its plan is made once per connection, not at every GET.
const STORED_RUN_SQL = `
SELECT r.id, r.thread_id, r.agent_id, r.created_at, r.parent_run_id, r.parent_tool_call_id, r.deployment_name, r.build_id, r.started_by,
  rr.thread_id AS rr_thread_id, rr.agent_id AS rr_agent_id, rr.status, rr.stop_reason, rr.limit_reached, rr.output, rr.error, rr.turns,
  rr.usage, rr.usage_with_children, rr.tool_calls, rr.created_at AS rr_created_at, rr.ended_at,
  t.live_turns, t.live_input_tokens + su.input_tokens AS live_input_tokens, t.live_output_tokens + su.output_tokens AS live_output_tokens,
  tc.live_tool_calls, a.arguments,
  (SELECT e.data->'prefix' FROM run_events e WHERE e.run_id = r.id AND e.seq = 1) AS prefix,
  rr.run_id IS NULL AND (EXISTS (SELECT 1 FROM run_approvals WHERE run_id = r.id AND status = 'pending')
    OR EXISTS (SELECT 1 FROM run_samplings WHERE run_id = r.id AND status = 'pending' AND needs_approval)) AS pending_approvals,
  rr.run_id IS NULL AND EXISTS (SELECT 1 FROM run_inputs WHERE run_id = r.id AND status = 'pending') AS pending_inputs,
  rr.run_id IS NULL AND EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.id
    AND NOT EXISTS (SELECT 1 FROM run_results cr WHERE cr.run_id = c.id)) AS running_children
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
    ...(r.deployment_name && r.build_id ? { version: { deploymentName: r.deployment_name, buildId: r.build_id } } : {}),
    ...(typeof r.prefix?.tokens === 'number'
      ? { prefix: { tokens: r.prefix.tokens, tokensEstimated: r.prefix.tokensEstimated === true } }
      : {}),
    toolCallArguments: new Map((r.arguments ?? []).map((c) => [c.id, { arguments: c.arguments ?? '{}', argumentsBytes: c.bytes ?? 2 }])),
    mayWait: { approvals: r.pending_approvals, inputs: r.pending_inputs, ...(r.running_children ? { children: true } : {}) },
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

/** A run's sub-agent runs still running, oldest first. */
export async function runningChildRuns(db: Queryable, runId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id FROM runs c WHERE c.parent_run_id = $1 AND NOT EXISTS (SELECT 1 FROM run_results cr WHERE cr.run_id = c.id)
     ORDER BY c.created_at, c.id`, [runId]);
  return rows.map((r) => r.id);
}
