import { isGrpcServiceError } from '@temporalio/client';

/** gRPC status codes (@grpc/grpc-js's `status`, which is not a dependency of ours). */
const CANCELLED = 1;
const UNKNOWN = 2;
const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

/**
 * Whether a Temporal client call failed because the server could not be reached, after the
 * client's own retries: refused (UNAVAILABLE), silent past the call's deadline, or a connection
 * reset, which the native client reports as UNKNOWN "transport error", or as CANCELLED
 * ("operation was canceled": the connection closed under the call), depending on when the reset
 * comes. The API cancels no call of its own. The service error sits in the cause chain (the
 * client wraps it: "Failed to start Workflow").
 */
export function isUnreachableTemporal(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (!isGrpcServiceError(e)) continue;
    return e.code === UNAVAILABLE || e.code === DEADLINE_EXCEEDED || e.code === CANCELLED
      || (e.code === UNKNOWN && /transport error/i.test(e.details || e.message));
  }
  return false;
}
