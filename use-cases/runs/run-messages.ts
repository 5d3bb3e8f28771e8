import type { Db } from '../../store/pool';
import { pageRunMessages, type RunMessagePage } from '../../store/runs/transcript-page';
import { runNotFound } from './runs';
import { requireRole, type Caller } from '../caller';

export interface TranscriptDeps {
  /** where runs are read (the API's pool for reads of runs) */
  db: Db;
}

/** A place in a run's transcript: the LLM turn, and 0 for its reply or i + 1 for its i-th tool call's result. */
export interface TranscriptPlace {
  turn: number;
  slot: number;
}

/**
 * A run's conversation so far, while it runs and after, from its own transcript (the thread's
 * messages receive it only when the run ends): its input, then its messages after `after`. Another
 * tenant's run answers as an unknown one.
 */
export async function pageRunConversation(
  db: Db, caller: Caller, runId: string, req: { after: TranscriptPlace; limit: number },
): Promise<RunMessagePage> {
  requireRole(caller, 'read');
  const page = await pageRunMessages(db, runId, caller.tenantId, req);
  if (!page) throw runNotFound(runId);
  return page;
}
