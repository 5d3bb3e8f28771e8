import type { ChatMessage, Usage } from '../../core/messages';
import { toAgent, type AgentRow } from '../agents';
import type { Agent } from '../../core/agent';
import { toIntegration, type IntegrationRow } from '../integrations/integrations';
import { type Integration } from '../../core/integration';
import type { ThreadMetadata } from '../../core/prompt-conditions';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { statementName, type Queryable } from '../pool';
import { type RunResult } from './results';
import { TOOL_CALLS_JSON, toToolCall, type ToolCallRecord, type ToolCallRow } from './tool-calls';
import { type StoredRunMessage } from './transcript';
import { RUN_MODEL, toRun, type RunRecord, type RunRow, type StartedBy } from './runs';
import { PROGRESS_ONLY, asWithQueries, type Write } from './writes';
import { storableJsonText, storableText } from '../storable-text';
import { threadFreeFor } from '../threads/thread-claim';
import { threadHistoryOf } from '../threads/threads';
import { rowByRef } from '../refs';

/**
 * The statements that start a run and each of its turns, and end the run: each step reads what it
 * needs in one round trip and writes in one, so a run's bookkeeping costs few round trips and few
 * commits (every commit waits for a WAL flush).
 */

/** A run's messages (the rows `where` picks) as one JSON array of {turn, slot, message}, in order. */
const transcriptOf = (where: string) => `(SELECT COALESCE(json_agg(json_build_object('turn', turn, 'slot', slot, 'message', message)
    ORDER BY turn, slot), '[]') FROM run_messages WHERE ${where})`;

/** A run to record on a thread of the tenant `tenantId` (a thread of another tenant is not found), and who starts it. */
export interface NewRunOnThread {
  runId: string;
  threadId: string;
  agentRef?: string;
  input: string;
  /** the tenant `default` unless told (the engine's own callers and tests) */
  tenantId?: string;
  startedBy?: StartedBy | null;
}

const startedByJson = (startedBy: StartedBy | null | undefined) => (startedBy ? JSON.stringify(startedBy) : null);

/**
 * A run's record, in one statement, so one round trip and one commit: the thread, the agent (by
 * id or name, of the thread's tenant; the thread's own when `agentRef` is absent), the thread's claim for the run (free,
 * or held by a run whose result is written) and the run's row. The claim and the row are written
 * only when the thread and an enabled agent exist, and only together. Without `run`, the thread is
 * held by a run whose result is not written: the caller decides whether that run has ended.
 */
export async function insertRunOnThread(db: Queryable, r: NewRunOnThread): Promise<{
  thread?: { id: string; agentId: string }; agent?: Agent; run?: RunRecord;
}> {
  const text = `WITH t AS (SELECT id, agent_id, tenant_id FROM threads WHERE id = $1 AND tenant_id = $5),
    a AS ${rowByRef('agents', 'COALESCE($2, (SELECT agent_id FROM t))', '$5')},
    claim AS (
      UPDATE threads th SET active_run_id = $3
      WHERE th.id = (SELECT id FROM t) AND EXISTS (SELECT 1 FROM a WHERE disabled_at IS NULL)
        AND ${threadFreeFor('th', '$3')}
      RETURNING th.id, th.tenant_id),
    run AS (
      INSERT INTO runs (id, thread_id, agent_id, input, tenant_id, started_by)
      SELECT $3, claim.id, a.id, $4, claim.tenant_id, $6 FROM claim, a RETURNING *)
    SELECT (SELECT row_to_json(t) FROM t) AS thread, (SELECT row_to_json(a) FROM a) AS agent, (SELECT row_to_json(run) FROM run) AS run`;
  const { rows } = await db.query<{ thread: { id: string; agent_id: string } | null; agent: AgentRow | null; run: RunRow | null }>({
    name: statementName(text), text, values: [
      r.threadId, r.agentRef ?? null, r.runId, r.input, r.tenantId ?? DEFAULT_TENANT_ID, startedByJson(r.startedBy),
    ],
  });
  const { thread, agent, run } = rows[0];
  return {
    ...(thread ? { thread: { id: thread.id, agentId: thread.agent_id } } : {}),
    ...(agent ? { agent: toAgent(agent) } : {}), ...(run ? { run: toRun(run) } : {}),
  };
}

/**
 * A run on a thread made for it, in one statement: the agent (by id or name, the tenant's), the thread (held by
 * the run from the start) and the run's row, written only when the agent exists and is enabled.
 * The tenant is `default` when not given.
 */
export async function insertRunOnNewThread(
  db: Queryable, r: Omit<NewRunOnThread, 'agentRef'> & { agentRef: string },
): Promise<{ agent?: Agent; run?: RunRecord }> {
  const text = `WITH a AS ${rowByRef('agents', '$1', '$5')},
    thread AS (
      INSERT INTO threads (id, agent_id, active_run_id, tenant_id) SELECT $2, a.id, $3, $5 FROM a WHERE a.disabled_at IS NULL
      RETURNING id, agent_id, tenant_id),
    run AS (
      INSERT INTO runs (id, thread_id, agent_id, input, tenant_id, started_by)
      SELECT $3, thread.id, thread.agent_id, $4, thread.tenant_id, $6 FROM thread RETURNING *)
    SELECT (SELECT row_to_json(a) FROM a) AS agent, (SELECT row_to_json(run) FROM run) AS run`;
  const { rows } = await db.query<{ agent: AgentRow | null; run: RunRow | null }>({
    name: statementName(text), text,
    values: [r.agentRef, r.threadId, r.runId, r.input, r.tenantId ?? DEFAULT_TENANT_ID, startedByJson(r.startedBy)],
  });
  const { agent, run } = rows[0];
  return { ...(agent ? { agent: toAgent(agent) } : {}), ...(run ? { run: toRun(run) } : {}) };
}

/**
 * A turn's start, in one round trip: the run's messages up to this turn, the agent as it is now (an
 * edit applies from the next turn) and, unless this turn's reply is stored already (a worker died
 * after storing it), its turn_started event and one more attempt of the turn, so that re-executions
 * after a crash are visible. Those two are progress (PROGRESS_ONLY): the turn's end writes them again.
 */
export async function beginTurn(
  db: Queryable, runId: string, turn: number, agentId: string, started: { seq: number; data: Record<string, unknown> },
): Promise<{ transcript: StoredRunMessage[]; agent?: Agent; tenantId?: string }> {
  const text = `WITH ${PROGRESS_ONLY}, replied AS (SELECT 1 FROM run_messages WHERE run_id = $1 AND turn = $2 AND slot = 0),
    event AS (
      INSERT INTO run_events (run_id, seq, type, data) SELECT $1, $3, 'turn_started', $4 FROM progress_only
      WHERE NOT EXISTS (SELECT 1 FROM replied)
      ON CONFLICT (run_id, seq) DO NOTHING),
    attempt AS (
      INSERT INTO run_turns (run_id, turn, attempts) SELECT $1, $2, 1 FROM progress_only WHERE NOT EXISTS (SELECT 1 FROM replied)
      ON CONFLICT (run_id, turn) DO UPDATE SET attempts = run_turns.attempts + 1)
    SELECT ${transcriptOf('run_id = $1 AND turn <= $2')} AS transcript,
      (SELECT to_jsonb(a) || ${RUN_MODEL} FROM agents a WHERE id = $5) AS agent`;
  const { rows } = await db.query<{ transcript: StoredRunMessage[]; agent: (AgentRow & { tenant_id: string }) | null }>({
    name: statementName(text), text, values: [runId, turn, started.seq, storableJsonText(started.data), agentId],
  });
  const { transcript, agent } = rows[0];
  // The agent's tenant is the run's: a run's agent is one of its thread's tenant.
  return { transcript, ...(agent ? { agent: toAgent(agent), tenantId: agent.tenant_id } : {}) };
}

/**
 * What preparing a run reads, in one round trip: the run, its agent and the agent's integrations,
 * whether its thread has data sources (imported by earlier runs), the thread's messages before the
 * run, and the snapshots of `kinds` an earlier attempt recorded.
 */
export async function runToPrepare(db: Queryable, runId: string, kinds: string[]): Promise<{
  run?: RunRecord; agent?: Agent; hasDataSources: boolean;
  /** the run's thread's metadata, which the agent's promptWhen conditions may test */
  threadMetadata: ThreadMetadata; history: { data: ChatMessage[]; bytes: number };
  snapshots: Record<string, { data: unknown; bytes: number }>;
  /** the agent's integrations as they are now, in the agent's order; ids that no longer exist are left out */
  integrations: Integration[];
}> {
  const text = `SELECT row_to_json(r) AS run, row_to_json(a) AS agent,
      (SELECT COALESCE(json_agg(i ORDER BY array_position(a.integration_ids, i.id)), '[]')
        FROM integrations i WHERE i.id = ANY(a.integration_ids)) AS integrations,
      EXISTS (SELECT 1 FROM data_sources WHERE thread_id = r.thread_id) AS has_data_sources,
      (SELECT metadata FROM threads WHERE id = r.thread_id) AS thread_metadata,
      ${threadHistoryOf('r.thread_id')} AS history,
      (SELECT json_object_agg(kind, json_build_object('data', data, 'bytes', bytes))
        FROM run_snapshots WHERE run_id = $1 AND kind = ANY($2)) AS snapshots
    FROM runs r LEFT JOIN agents a ON a.id = r.agent_id WHERE r.id = $1`;
  const { rows } = await db.query<{
    run: RunRow; agent: AgentRow | null; integrations: IntegrationRow[]; has_data_sources: boolean; thread_metadata: ThreadMetadata | null;
    history: { data: ChatMessage[]; bytes: number };
    snapshots: Record<string, { data: unknown; bytes: number }> | null;
  }>({ name: statementName(text), text, values: [runId, kinds] });
  const r = rows[0];
  if (!r) return { hasDataSources: false, threadMetadata: {}, history: { data: [], bytes: 0 }, snapshots: {}, integrations: [] };
  return {
    run: toRun(r.run), ...(r.agent ? { agent: toAgent(r.agent) } : {}), hasDataSources: r.has_data_sources,
    threadMetadata: r.thread_metadata ?? {}, history: r.history, snapshots: r.snapshots ?? {},
    integrations: r.integrations.map(toIntegration),
  };
}

/** What a run that has ended already ended with. */
export type StoredOutcome = Pick<RunResult, 'status' | 'stopReason' | 'limitReached' | 'error' | 'turns' | 'usage'>;

/** What ending a run reads, in one round trip: how it ended if it has, and else the run, its transcript and its tool calls. */
export async function runToFinish(db: Queryable, runId: string): Promise<
  { ended: StoredOutcome }
  | { ended?: undefined; run?: RunRecord; agentName?: string; transcript: StoredRunMessage[]; toolCalls: ToolCallRecord[] }
> {
  const text = `SELECT (SELECT json_build_object('status', status, 'stopReason', stop_reason, 'limitReached', limit_reached, 'error', error,
                                    'turns', turns, 'usage', usage)
        FROM run_results WHERE run_id = $1) AS ended,
      (SELECT row_to_json(r) FROM runs r WHERE id = $1) AS run,
      (SELECT a.name FROM runs r JOIN agents a ON a.id = r.agent_id WHERE r.id = $1) AS agent_name,
      ${transcriptOf('run_id = $1')} AS transcript,
      (SELECT COALESCE(json_agg(c ORDER BY turn, slot), '[]') FROM run_tool_calls c WHERE run_id = $1) AS tool_calls`;
  const { rows } = await db.query<{
    ended: StoredOutcome | null; run: RunRow | null; agent_name: string | null; transcript: StoredRunMessage[]; tool_calls: ToolCallRow[];
  }>({ name: statementName(text), text, values: [runId] });
  const r = rows[0];
  if (r.ended) return { ended: r.ended };
  return {
    ...(r.run ? { run: toRun(r.run) } : {}), ...(r.agent_name ? { agentName: r.agent_name } : {}),
    transcript: r.transcript, toolCalls: r.tool_calls.map(toToolCall),
  };
}

/**
 * A run's end, in one statement with `writes`: the write-once result `result` inserts (RETURNING
 * thread_id, agent_id, created_at) and, only if that result is the first, the thread's new
 * messages (`messages`: rows of (ord, message), numbered in ord order after the thread's last),
 * the thread's release, the end of its pending approvals, budget requests and caller tool calls (nobody can answer for an ended run) and
 * run_ended. Returns the run's identity and creation time when the result is the first, else
 * undefined (a retried finish, or a cancelled run that ended first, keeps the first outcome).
 * A thread is written by its active run alone; were two writers to race, the (thread_id, seq) key
 * would fail one statement whole, and its retry would number after the other's messages.
 */
async function endRun(
  db: Queryable, writes: Write[], runId: string, ended: { seq: number; data: Record<string, unknown> },
  parts: (param: (value: unknown) => string, run: string) => { result: string; messages: string },
): Promise<{ threadId: string; agentId: string; createdAt: string } | undefined> {
  const { ctes, values } = asWithQueries(writes);
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const run = param(runId);
  const { result, messages } = parts(param, run);
  const text = `WITH ${[...ctes, `result AS (${result})`].join(', ')},
    thread_messages AS (
      INSERT INTO messages (thread_id, seq, run_id, message)
      SELECT res.thread_id,
        (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE thread_id = res.thread_id) + row_number() OVER (ORDER BY m.ord),
        ${run}, m.message
      FROM result res, (${messages}) m),
    released AS (
      UPDATE threads SET active_run_id = NULL WHERE id = (SELECT thread_id FROM result) AND active_run_id = ${run}),
    approvals AS (
      UPDATE run_approvals SET status = 'cancelled', resolved_by = 'cancel', resolved_at = now()
      WHERE run_id = ${run} AND status = 'pending' AND EXISTS (SELECT 1 FROM result)),
    budgets AS (
      UPDATE run_budget_requests SET status = 'cancelled', resolved_at = now()
      WHERE run_id = ${run} AND status = 'pending' AND EXISTS (SELECT 1 FROM result)),
    callers AS (
      UPDATE run_caller_tool_calls SET status = CASE WHEN status = 'pending' THEN 'cancelled' ELSE status END,
        answered_at = coalesce(answered_at, now()), answer = NULL
      WHERE run_id = ${run} AND (status = 'pending' OR answer IS NOT NULL) AND EXISTS (SELECT 1 FROM result)),
    drafts AS (
      DELETE FROM run_turn_drafts WHERE run_id = ${run}),
    event AS (
      INSERT INTO run_events (run_id, seq, type, data)
      SELECT ${run}, ${param(ended.seq)}::int, 'run_ended', ${param(storableJsonText(ended.data))}::jsonb FROM result
      ON CONFLICT (run_id, seq) DO NOTHING)
    SELECT thread_id, agent_id, created_at FROM result`;
  const { rows } = await db.query<{ thread_id: string; agent_id: string; created_at: Date }>({ name: statementName(text), text, values });
  const r = rows[0];
  return r && { threadId: r.thread_id, agentId: r.agent_id, createdAt: r.created_at.toISOString() };
}

/** A run's end as the workflow decided it (failed, cancelled, out of turns) or the reconciler found it: see endRun. */
export async function writeRunEnd(
  db: Queryable, r: Omit<RunResult, 'endedAt'>, messages: ChatMessage[], ended: { seq: number; data: Record<string, unknown> },
): Promise<boolean> {
  const written = await endRun(db, [], r.runId, ended, (param, run) => ({
    result: `INSERT INTO run_results (run_id, thread_id, agent_id, status, stop_reason, output, error, turns, usage, tool_calls, created_at,
                               limit_reached, usage_with_children)
      VALUES (${run}, ${[
        r.threadId, r.agentId, r.status, r.stopReason, storableText(r.output), r.error && storableJsonText(r.error), r.turns,
        JSON.stringify(r.usage), storableJsonText(r.toolCalls), r.createdAt, r.limitReached ?? null,
        JSON.stringify(r.usageWithChildren ?? r.usage),
      ].map(param).join(', ')})
      ON CONFLICT (run_id) DO NOTHING RETURNING thread_id, agent_id, created_at`,
    messages: `SELECT n AS ord, m AS message
      FROM unnest(${param(messages.map((m) => storableJsonText(m)))}::jsonb[]) WITH ORDINALITY AS t(m, n)`,
  }));
  return written !== undefined;
}

/** A turn that answers: the run ends with it. */
export interface AnsweringTurn {
  runId: string;
  turn: number;
  reply: ChatMessage;
  /** the run's usage, this turn's included */
  usage: Usage;
  /** and with its sub-agents' runs */
  usageWithChildren?: Usage;
  /** the run_ended event's number */
  seq: number;
}

/**
 * A turn that answers ends its run in the statement that writes the turn (`writes`: its reply, its
 * end), so the run's end costs no step of its own: the result is completed, with the reply as
 * output and the tool calls as stored, and the thread gets the run's transcript, then the reply.
 * The reply's own row is written by `writes`, which this statement's other parts do not see.
 */
export async function writeAnswer(
  db: Queryable, writes: Write[], end: AnsweringTurn,
): Promise<{ threadId: string; agentId: string; createdAt: string } | undefined> {
  const ended = { seq: end.seq, data: { status: 'completed', stopReason: 'answer', error: null } };
  return endRun(db, writes, end.runId, ended, (param, run) => {
    const turn = param(end.turn);
    return {
      result: `INSERT INTO run_results (run_id, thread_id, agent_id, status, stop_reason, output, error, turns, usage, tool_calls,
                                 created_at, usage_with_children)
        SELECT r.id, r.thread_id, r.agent_id, 'completed', 'answer', ${param(storableText(end.reply.content))}, NULL,
          ${turn}::int - COALESCE(r.forked_from_turn, 1) + 1,
          ${param(JSON.stringify(end.usage))}::jsonb, (SELECT COALESCE(${TOOL_CALLS_JSON}, '[]') FROM run_tool_calls WHERE run_id = r.id),
          r.created_at,
          ${param(JSON.stringify(end.usageWithChildren ?? end.usage))}::jsonb
        FROM runs r WHERE r.id = ${run}
        ON CONFLICT (run_id) DO NOTHING RETURNING thread_id, agent_id, created_at`,
      messages: `SELECT ARRAY[turn, slot] AS ord, message FROM run_messages WHERE run_id = ${run} AND turn < ${turn}::int
        UNION ALL SELECT ARRAY[${turn}::int, 0], ${param(storableJsonText(end.reply))}::jsonb`,
    };
  });
}
