import { EngineError } from '../../core/engine-error';
import type { ThreadMetadata } from '../../core/prompt-conditions';
import { agentDisabledText } from '../../store/agents';
import { listDataSources, type DataSource } from '../../store/data-sources';
import type { Db } from '../../store/pool';
import { MESSAGE_PREVIEW_CHARS, pageThreadMessages, type MessagePage } from '../../store/threads/thread-messages';
import { findThread, insertThread, listThreads, updateThreadMetadata, type Thread, type ThreadPage } from '../../store/threads/threads';
import { loadAgent } from '../agents/agents';

/*
 * Threads as callers see them: created for an agent (by id or name), listed, read, their metadata
 * replaced, their conversation and data sources read. A thread that does not exist is not_found.
 */

export interface ThreadDeps {
  db: Db;
}

/** Where a message's texts are cut for reading (a thread's conversation, a run's). */
export { MESSAGE_PREVIEW_CHARS };

export const threadNotFound = (threadId: string) => new EngineError('not_found', `Thread ${threadId} does not exist`);

/** By id; not_found otherwise. */
export async function loadThread(db: Db, threadId: string): Promise<Thread> {
  const thread = await findThread(db, threadId);
  if (!thread) throw threadNotFound(threadId);
  return thread;
}

/** A new thread for an agent of the tenant that is not deleted. */
export async function createThread(db: Db, req: { tenantId: string; agentRef: string; metadata?: ThreadMetadata }): Promise<Thread> {
  const agent = await loadAgent(db, req.tenantId, req.agentRef);
  if (agent.disabledAt) throw new EngineError('agent_disabled', agentDisabledText(agent));
  return insertThread(db, agent.id, req.metadata);
}

/** A page of threads, newest first, of every agent or of one (by id or name, the tenant's). */
export async function listThreadsOf(
  db: Db, req: { tenantId: string; agentRef?: string; cursor?: string; limit: number },
): Promise<ThreadPage> {
  const { agentRef, tenantId, ...page } = req;
  if (agentRef === undefined) return listThreads(db, page);
  const agent = await loadAgent(db, tenantId, agentRef);
  return listThreads(db, { ...page, agentId: agent.id });
}

/** Replaces the thread's metadata whole; the thread's next run reads it. */
export async function changeThreadMetadata(db: Db, threadId: string, metadata: ThreadMetadata): Promise<Thread> {
  const thread = await updateThreadMetadata(db, threadId, metadata);
  if (!thread) throw threadNotFound(threadId);
  return thread;
}

/** A page of the thread's conversation, oldest first, its long texts cut. */
export async function pageConversation(db: Db, threadId: string, page: { after: number; limit: number }): Promise<MessagePage> {
  await loadThread(db, threadId);
  return pageThreadMessages(db, threadId, page);
}

/** The CSV resources imported into the thread, without where they live in the database. */
export async function listThreadSources(db: Db, threadId: string): Promise<Omit<DataSource, 'threadId' | 'schemaName'>[]> {
  await loadThread(db, threadId);
  const sources = await listDataSources(db, threadId);
  return sources.map(({ threadId: _t, schemaName: _s, ...source }) => source);
}
