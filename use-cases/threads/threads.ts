import { EngineError } from '../../core/engine-error';
import type { ThreadMetadata } from '../../core/prompt-conditions';
import { agentDisabledText } from '../../store/agents';
import { listDataSources, type DataSource } from '../../store/data-sources';
import type { Db } from '../../store/pool';
import { findTenantThreadWithCost, type ThreadWithCost } from '../../store/runs/thread-costs';
import { MESSAGE_PREVIEW_CHARS, pageThreadMessages, type MessagePage } from '../../store/threads/thread-messages';
import {
  findTenantThread, insertThread, listThreads, updateThreadMetadata, type Thread, type ThreadPage,
} from '../../store/threads/threads';
import type { Caller } from '../caller';
import { loadAgent } from '../agents/agents';

/*
 * Threads as callers see them: created for an agent (by id or name), listed, read (with their runs' cost), their metadata
 * replaced, their conversation and data sources read, each of the caller's tenant only. A thread
 * that does not exist, or is another tenant's, is not_found.
 */

export interface ThreadDeps {
  db: Db;
}

/** Where a message's texts are cut for reading (a thread's conversation, a run's). */
export { MESSAGE_PREVIEW_CHARS };

export const threadNotFound = (threadId: string) => new EngineError('not_found', `Thread ${threadId} does not exist`);

/** The caller's thread, by id; not_found otherwise (another tenant's thread answers as an unknown one). */
export async function loadThread(db: Db, caller: Caller, threadId: string): Promise<Thread> {
  const thread = await findTenantThread(db, caller.tenantId, threadId);
  if (!thread) throw threadNotFound(threadId);
  return thread;
}

/** The caller's thread with what its runs cost (GET /v1/threads/:id); not_found otherwise. */
export async function readThread(db: Db, caller: Caller, threadId: string): Promise<ThreadWithCost> {
  const thread = await findTenantThreadWithCost(db, caller.tenantId, threadId);
  if (!thread) throw threadNotFound(threadId);
  return thread;
}

/** A new thread of the caller's tenant, for an agent that is not deleted. */
export async function createThread(db: Db, caller: Caller, req: { agentRef: string; metadata?: ThreadMetadata }): Promise<Thread> {
  const agent = await loadAgent(db, caller.tenantId, req.agentRef);
  if (agent.disabledAt) throw new EngineError('agent_disabled', agentDisabledText(agent));
  return insertThread(db, agent.id, req.metadata, caller.tenantId);
}

/** A page of the caller's threads, newest first, of every agent or of one (by id or name). */
export async function listThreadsOf(
  db: Db, caller: Caller, req: { agentRef?: string; cursor?: string; limit: number },
): Promise<ThreadPage> {
  const { agentRef, ...page } = req;
  const tenantId = caller.tenantId;
  if (agentRef === undefined) return listThreads(db, { ...page, tenantId });
  const agent = await loadAgent(db, tenantId, agentRef);
  return listThreads(db, { ...page, tenantId, agentId: agent.id });
}

/** Replaces the metadata of the caller's thread whole; the thread's next run reads it. */
export async function changeThreadMetadata(db: Db, caller: Caller, threadId: string, metadata: ThreadMetadata): Promise<Thread> {
  const thread = await updateThreadMetadata(db, caller.tenantId, threadId, metadata);
  if (!thread) throw threadNotFound(threadId);
  return thread;
}

/** A page of the caller's thread's conversation, oldest first, its long texts cut. */
export async function pageConversation(
  db: Db, caller: Caller, threadId: string, page: { after: number; limit: number },
): Promise<MessagePage> {
  await loadThread(db, caller, threadId);
  return pageThreadMessages(db, threadId, page);
}

/** The CSV resources imported into the caller's thread, without where they live in the database. */
export async function listThreadSources(
  db: Db, caller: Caller, threadId: string,
): Promise<Omit<DataSource, 'threadId' | 'schemaName'>[]> {
  await loadThread(db, caller, threadId);
  const sources = await listDataSources(db, threadId);
  return sources.map(({ threadId: _t, schemaName: _s, ...source }) => source);
}
