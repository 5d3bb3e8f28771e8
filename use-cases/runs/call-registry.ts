import { markCallCancelled, pairCallWithRun } from '../../store/mcp-calls';
import type { Db } from '../../store/pool';

/**
 * Which run a client's request started, so that `notifications/cancelled` can cancel it. Either
 * side may come first: a cancel that arrives before the run has started is remembered, and the
 * call cancels its run as soon as it has one.
 */
export interface CallRegistry {
  /** records the call's run; true when a cancel for the request already came */
  register(requestId: string | number, runId: string): Promise<boolean>;
  /** marks the request cancelled; the run to cancel, when it has started */
  requestCancel(requestId: string | number): Promise<string | undefined>;
}

/** One connection (stdio): request ids are unique for its lifetime, so memory suffices. */
export function memoryCallRegistry(): CallRegistry {
  const runs = new Map<string, string>();
  const cancelled = new Set<string>();
  return {
    async register(requestId, runId) {
      runs.set(String(requestId), runId);
      return cancelled.has(String(requestId));
    },
    async requestCancel(requestId) {
      cancelled.add(String(requestId));
      return runs.get(String(requestId));
    },
  };
}

/**
 * Streamable HTTP without sticky routing: the cancel notification is its own POST and may reach
 * another API process than the call, so the pairing lives in the database, keyed by the
 * Mcp-Session-Id the client got at initialize.
 */
export function dbCallRegistry(db: Db, sessionId: string): CallRegistry {
  return {
    register: (requestId, runId) => pairCallWithRun(db, sessionId, String(requestId), runId),
    requestCancel: (requestId) => markCallCancelled(db, sessionId, String(requestId)),
  };
}
