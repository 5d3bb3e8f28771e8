import { newId } from '../ids';
import type { ChatMessage } from '../messages';
import type { Queryable } from './pool';

export interface Thread {
  id: string;
  agentId: string;
  activeRunId: string | null;
  createdAt: string;
}

interface ThreadRow { id: string; agent_id: string; active_run_id: string | null; created_at: Date }
const toThread = (r: ThreadRow): Thread => ({
  id: r.id, agentId: r.agent_id, activeRunId: r.active_run_id, createdAt: r.created_at.toISOString(),
});

export async function insertThread(db: Queryable, agentId: string): Promise<Thread> {
  const { rows } = await db.query<ThreadRow>('INSERT INTO threads (id, agent_id) VALUES ($1, $2) RETURNING *', [newId('thr'), agentId]);
  return toThread(rows[0]);
}

export async function findThread(db: Queryable, id: string): Promise<Thread | undefined> {
  const { rows } = await db.query<ThreadRow>('SELECT * FROM threads WHERE id = $1', [id]);
  return rows[0] && toThread(rows[0]);
}

export async function threadMessages(db: Queryable, threadId: string): Promise<ChatMessage[]> {
  const { rows } = await db.query<{ message: ChatMessage }>('SELECT message FROM messages WHERE thread_id = $1 ORDER BY seq', [threadId]);
  return rows.map((r) => r.message);
}
