import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { EngineError, type EngineErrorCode } from '../core/engine-error';

/**
 * How the MCP server answers an error a use case threw, by its code (the API's answer is an HTTP
 * status: api/problem.ts):
 * - `settled`: what the client asked about was decided, answered or closed elsewhere meanwhile;
 * - `refused`: the request's own mistake, or a state it cannot change;
 * - `failed`: the engine's, or a dependency's: thrown on, as an internal error.
 * A client is told of the first two with -32602 (Invalid params), the code as `data.reason` beside
 * the error's details; an agent call the engine refuses to start is an error result instead
 * (agent-call.ts), whatever the code, since the model reads it.
 */
type McpAnswer = 'settled' | 'refused' | 'failed';

const ANSWER_OF: Record<EngineErrorCode, McpAnswer> = {
  already_decided: 'settled', input_closed: 'settled',
  not_found: 'refused', conflict: 'refused', validation: 'refused', invalid: 'refused', admin_required: 'refused', forbidden: 'refused',
  thread_busy: 'refused', agent_disabled: 'refused', agent_busy: 'refused', agent_in_use: 'refused', defined_by_file: 'refused',
  sub_agent_cycle: 'refused', in_use: 'refused', authorization_required: 'refused', not_authorizable: 'refused',
  unset_variable: 'refused', too_many_runs: 'refused',
  unreachable: 'failed', authorization_failed: 'failed', preview_failed: 'failed', timeout: 'failed', unavailable: 'failed',
  search_attributes_missing: 'failed',
};

/** Whether the error says that what was asked about was settled elsewhere meanwhile: nothing is left to do. */
export const settledElsewhere = (err: unknown): boolean => err instanceof EngineError && ANSWER_OF[err.code] === 'settled';

/** The -32602 a client is answered for an error it can act on; the error itself otherwise, to be thrown on. */
export function clientError(err: unknown): unknown {
  if (!(err instanceof EngineError) || ANSWER_OF[err.code] === 'failed') return err;
  return new ProtocolError(ProtocolErrorCode.InvalidParams, err.message, { reason: err.code, ...err.details });
}
