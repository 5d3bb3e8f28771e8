import { newId } from '../../platform/ids';
import type { ChatMessage } from '../../core/messages';
import type { ForkedFrom } from '../../core/fork';
import { EngineError } from '../../core/engine-error';
import type { ThreadMetadata } from '../../core/prompt-conditions';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { statementName, type Queryable } from '../pool';

export interface Thread {
  id: string;
  agentId: string;
  activeRunId: string | null;
  /** set by callers; an agent's promptWhen conditions may test it */
  metadata: ThreadMetadata;
  /** a fork's thread: the run and the turn its conversation was forked from (migration 36) */
  forkedFrom: ForkedFrom | null;
  createdAt: string;
}

export interface ThreadRow {
  id: string; agent_id: string; active_run_id: string | null; metadata: ThreadMetadata | null; created_at: Date;
  forked_from_run_id?: string | null; forked_from_turn?: number | null;
}
export const toThread = (r: ThreadRow): Thread => ({
  id: r.id, agentId: r.agent_id, activeRunId: r.active_run_id, metadata: r.metadata ?? {}, createdAt: r.created_at.toISOString(),
  forkedFrom: r.forked_from_run_id ? { runId: r.forked_from_run_id, turn: r.forked_from_turn ?? 1 } : null,
});

/** A new thread of the tenant (the tenant `default` unless told: the engine's own callers and tests). */
export async function insertThread(
  db: Queryable, agentId: string, metadata: ThreadMetadata = {}, tenantId = DEFAULT_TENANT_ID,
): Promise<Thread> {
  const { rows } = await db.query<ThreadRow>(
    'INSERT INTO threads (id, agent_id, metadata, tenant_id) VALUES ($1, $2, $3, $4) RETURNING *',
    [newId('thr'), agentId, JSON.stringify(metadata), tenantId],
  );
  return toThread(rows[0]);
}

/** Replaces the metadata of the tenant's thread; undefined when the tenant has no such thread. */
export async function updateThreadMetadata(
  db: Queryable, tenantId: string, id: string, metadata: ThreadMetadata,
): Promise<Thread | undefined> {
  const { rows } = await db.query<ThreadRow>(
    'UPDATE threads SET metadata = $3 WHERE id = $1 AND tenant_id = $2 RETURNING *', [id, tenantId, JSON.stringify(metadata)],
  );
  return rows[0] && toThread(rows[0]);
}

/**
 * The tenant's thread `id` for the agent, unless it exists already (or the agent is disabled);
 * whether the tenant has it now (one of another tenant with this id is not the tenant's).
 */
export async function ensureThread(db: Queryable, id: string, agentId: string, tenantId: string): Promise<boolean> {
  const made = await db.query(
    'INSERT INTO threads (id, agent_id, tenant_id) SELECT $1, id, $3 FROM agents WHERE id = $2 AND disabled_at IS NULL '
      + 'ON CONFLICT (id) DO NOTHING RETURNING id',
    [id, agentId, tenantId],
  );
  if (made.rowCount === 1) return true;
  // A statement of its own: one inserting the same thread meanwhile has committed after the insert's snapshot was taken.
  return (await findTenantThread(db, tenantId, id)) !== undefined;
}

/** Any tenant's thread: for the engine's own work (a run's worker), never for a caller's request. */
export async function findThread(db: Queryable, id: string): Promise<Thread | undefined> {
  const { rows } = await db.query<ThreadRow>('SELECT * FROM threads WHERE id = $1', [id]);
  return rows[0] && toThread(rows[0]);
}

/** The tenant's thread: another tenant's answers as none does. */
export async function findTenantThread(db: Queryable, tenantId: string, id: string): Promise<Thread | undefined> {
  const { rows } = await db.query<ThreadRow>('SELECT * FROM threads WHERE id = $1 AND tenant_id = $2', [id, tenantId]);
  return rows[0] && toThread(rows[0]);
}

/** A subquery: the messages of the thread `threadId` names (a parameter or a column), in order, as {data, bytes}. */
export const threadHistoryOf = (threadId: string) => `(SELECT json_build_object('data', COALESCE(json_agg(message ORDER BY seq), '[]'),
    'bytes', COALESCE(sum(octet_length(message::text)), 0)) FROM messages WHERE thread_id = ${threadId})`;

const HISTORY_SQL = `SELECT ${threadHistoryOf('$1')} AS history`;

/** The thread's messages in order, with their stored size (for a bounded cache). */
export async function threadHistoryWithBytes(db: Queryable, threadId: string): Promise<{ data: ChatMessage[]; bytes: number }> {
  const { rows } = await db.query<{ history: { data: ChatMessage[]; bytes: number } }>({
    name: statementName(HISTORY_SQL), text: HISTORY_SQL, values: [threadId],
  });
  return rows[0].history;
}

export async function threadMessages(db: Queryable, threadId: string): Promise<ChatMessage[]> {
  return (await threadHistoryWithBytes(db, threadId)).data;
}

/** A thread in a listing: what a person needs to pick a conversation. */
export interface ThreadSummary extends Omit<Thread, 'activeRunId' | 'forkedFrom'> {
  agentName: string;
  messageCount: number;
  lastMessageAt: string | null;
}

export interface ThreadPage {
  threads: ThreadSummary[];
  nextCursor: string | null;
}

/**
 * The statement of one shape of request (of one agent or all, first page or after a cursor), named:
 * each is parsed and planned once per connection. One statement per shape, not one with
 * `$n IS NULL OR …` for all: the plan PostgreSQL keeps for a prepared statement (its generic plan)
 * cannot drop such a condition, and would read every thread of the tenant and sort them where the
 * index gives the page in order. The messages are counted, and agents named, for the page's threads only.
 */
function listThreadsSql(byAgent: boolean, afterCursor: boolean): string {
  const micros = byAgent ? '$4' : '$3';
  const id = byAgent ? '$5' : '$4';
  const where = [
    't.tenant_id = $1',
    ...(byAgent ? ['t.agent_id = $3'] : []),
    ...(afterCursor ? [`(t.created_at, t.id) < ('epoch'::timestamptz + ${micros}::bigint * interval '1 microsecond', ${id}::text)`] : []),
  ];
  return `SELECT p.id, p.agent_id, (SELECT a.name FROM agents a WHERE a.id = p.agent_id) AS agent_name, p.metadata, p.created_at,
       (extract(epoch FROM p.created_at) * 1000000)::bigint::text AS micros,
       (SELECT count(*)::integer FROM messages m WHERE m.thread_id = p.id) AS message_count,
       (SELECT max(m.created_at) FROM messages m WHERE m.thread_id = p.id) AS last_message_at
     FROM (SELECT t.id, t.agent_id, t.metadata, t.created_at FROM threads t WHERE ${where.join(' AND ')}
           ORDER BY t.created_at DESC, t.id DESC LIMIT $2) p
     ORDER BY p.created_at DESC, p.id DESC`;
}

const LIST_THREADS_SQL = [false, true].map((byAgent) => [false, true].map((after) => listThreadsSql(byAgent, after)));

/**
 * A page of the tenant's threads, newest first, optionally of one agent. The cursor is the last thread's
 * (creation time in microseconds, id): keyset paging, stable while threads are added.
 */
export async function listThreads(
  db: Queryable, req: { tenantId: string; agentId?: string; cursor?: string; limit: number },
): Promise<ThreadPage> {
  const after = req.cursor === undefined ? undefined : decodeThreadCursor(req.cursor);
  const text = LIST_THREADS_SQL[req.agentId !== undefined ? 1 : 0][after ? 1 : 0];
  const { rows } = await db.query<{
    id: string; agent_id: string; agent_name: string; metadata: ThreadMetadata; created_at: Date; micros: string; message_count: number;
    last_message_at: Date | null;
  }>({
    name: statementName(text), text,
    values: [req.tenantId, req.limit + 1, ...(req.agentId !== undefined ? [req.agentId] : []), ...(after ? [after.micros, after.id] : [])],
  });
  const page = rows.slice(0, req.limit);
  const last = page.at(-1);
  return {
    threads: page.map((r) => ({
      id: r.id, agentId: r.agent_id, agentName: r.agent_name, metadata: r.metadata, createdAt: r.created_at.toISOString(),
      messageCount: r.message_count, lastMessageAt: r.last_message_at?.toISOString() ?? null,
    })),
    nextCursor: rows.length > req.limit && last ? Buffer.from(`${last.micros}.${last.id}`).toString('base64url') : null,
  };
}

/** A cursor this listing did not issue is the caller's mistake. */
function decodeThreadCursor(cursor: string): { micros: string; id: string } {
  const match = /^(\d{1,18})\.([A-Za-z0-9_-]{1,128})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw new EngineError('invalid', 'The cursor is not one this listing gave out: use the nextCursor of a previous page');
  return { micros: match[1], id: match[2] };
}

/** Whether the thread exists in the tenant: another tenant's thread is as good as none. */
export async function isTenantThread(db: Queryable, tenantId: string, threadId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM threads WHERE id = $1 AND tenant_id = $2', [threadId, tenantId]);
  return (rowCount ?? 0) > 0;
}
