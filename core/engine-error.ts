/**
 * What went wrong, for the caller of a use case: the one error type use cases throw. The code
 * says it for programs; the edges translate it once, the API to an HTTP status (api/problem.ts),
 * the MCP server to a protocol error or an error result (mcp-server/engine-errors.ts).
 */
export type EngineErrorCode =
  /** what the request names does not exist */
  | 'not_found'
  /** a name is taken, or the state refuses the change (a request that reused its Idempotency-Key) */
  | 'conflict'
  /** the request's input does not hold (`field`, when one is at fault, names it) */
  | 'validation'
  /** a value the engine gave out (a cursor) came back altered or for another listing */
  | 'invalid'
  /** only the operator may do this (`field` names what they alone may set) */
  | 'admin_required'
  /** the caller's roles do not allow this (`role` names the one needed) */
  | 'forbidden'
  | 'thread_busy' | 'agent_disabled' | 'agent_busy' | 'agent_in_use' | 'defined_by_file' | 'sub_agent_cycle'
  /** an integration agents still use */
  | 'in_use'
  /** an approval decided before (`approvalStatus` and `decision` say how) */
  | 'already_decided'
  /** a server's question that no longer waits for an answer */
  | 'input_closed'
  /** an MCP server that wants OAuth authorization first (the details carry the authorization's state) */
  | 'authorization_required'
  | 'not_authorizable'
  /** a `${VAR}` to expand that the environment does not set */
  | 'unset_variable'
  /** a worker answered that the MCP server failed */
  | 'unreachable' | 'authorization_failed' | 'preview_failed'
  /** no worker answered in time */
  | 'timeout'
  /** the tenant runs as many runs as its cap allows (maxRunningRuns): start again once one has ended */
  | 'too_many_runs'
  /** a dependency (a worker, the database, Temporal) is out for now: try again shortly */
  | 'unavailable'
  /** the Temporal namespace lacks search attributes runs start with, and the engine may not add them */
  | 'search_attributes_missing';

export class EngineError extends Error {
  override name = 'EngineError';

  /** `details`: what a program needs besides the message (the field at fault, the earlier decision) */
  constructor(readonly code: EngineErrorCode, message: string, readonly details: Readonly<Record<string, unknown>> = {}) {
    super(message);
  }
}
