import { createHash, randomUUID } from 'node:crypto';
import { DEFAULT_TENANT_ID } from '../core/tenancy';

export type IdPrefix = 'agt' | 'thr' | 'run' | 'int' | 'ten' | 'key' | 'evl';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID().replace(/-/g, '')}`;
}

/** A run id derived from (threadId, Idempotency-Key): the same key gives the same run. */
export function idempotentRunId(threadId: string, key: string): string {
  return `run_${createHash('sha256').update(`${threadId}\u0000${key}`).digest('hex').slice(0, 32)}`;
}

/**
 * The thread a one-shot run with this Idempotency-Key starts in the tenant: the same key gives the
 * same thread, and so the same run; in another tenant, another thread. The tenant `default`'s ids
 * derive from the key alone, as before tenants, so that its retries find what they started then.
 */
export function idempotentThreadId(key: string, tenantId = DEFAULT_TENANT_ID): string {
  const scope = tenantId === DEFAULT_TENANT_ID ? '' : `${tenantId}\u0000`;
  return `thr_${createHash('sha256').update(`new-thread\u0000${scope}${key}`).digest('hex').slice(0, 32)}`;
}

/** The run (and its thread) a sub-agent call starts: derived from the parent's run and call, so a retry finds the same one. */
export function childRunIds(parentRunId: string, toolCallId: string): { runId: string; threadId: string } {
  const hash = (what: string) => createHash('sha256').update(`${what}\u0000${parentRunId}\u0000${toolCallId}`).digest('hex').slice(0, 32);
  return { runId: `run_${hash('child-run')}`, threadId: `thr_${hash('child-thread')}` };
}

/**
 * The run an eval's replay of its `index`-th run is, and the thread its group replays on: derived
 * from the eval, so a retried activity or a worker killed mid-way never makes a replay twice.
 */
export function evalReplayIds(evalId: string, index: number, group: number): { runId: string; threadId: string } {
  const hash = (what: string, n: number) => createHash('sha256').update(`${what}\u0000${evalId}\u0000${n}`).digest('hex').slice(0, 32);
  return { runId: `run_${hash('eval-run', index)}`, threadId: `thr_${hash('eval-thread', group)}` };
}
