import type { ContextPreview } from '../../core/context-preview';
import { EngineError } from '../../core/engine-error';
import type { Db } from '../../store/pool';
import { isTenantThread } from '../../store/threads/threads';
import { previewContext, type WorkerQuestionDeps } from '../worker-questions';
import type { Caller } from '../caller';
import { loadAgent } from './agents';

/**
 * The prompt prefix an agent's next run would get (on `threadId`, the tenant's, whose metadata its
 * promptWhen conditions are tested against), as a worker builds it: nothing is stored and no run starts.
 */
export async function previewAgentContext(
  deps: WorkerQuestionDeps & { db: Db }, caller: Caller, ref: string, threadId?: string,
): Promise<ContextPreview> {
  const agent = await loadAgent(deps.db, caller.tenantId, ref);
  if (threadId !== undefined && !(await isTenantThread(deps.db, caller.tenantId, threadId))) {
    throw new EngineError('not_found', `Thread ${threadId} does not exist`);
  }
  return previewContext(deps, agent.id, threadId);
}
