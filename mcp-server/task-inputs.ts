import { ProtocolError, ProtocolErrorCode, type ElicitResult } from '@modelcontextprotocol/server';
import type { RunView } from '../core/run-view';
import type { Caller } from '../use-cases/caller';
import { answerOverMcp, decideOverMcp } from './audited-decisions';
import type { AgentCallDeps } from './call-context';
import { decisionOf } from './approval-elicitation';
import { clientError } from './engine-errors';

/**
 * A 2026-era client's answers to a task's questions (tasks/update): each key names what the task
 * asked (agent-tasks.ts inputRequestsOf): `approval:<toolCallId>` a pending approval, decided as a
 * REST decision by `mcp_client`; `input:<inputId>` an MCP server's question, answered as
 * POST /v1/runs/:id/inputs/:inputId answers it. A dismissed approval form decides nothing.
 */

const MAX_ANSWERS = 32;
const REASON_CHARS = 1_000;

const invalid = (message: string, data?: Record<string, unknown>) => new ProtocolError(ProtocolErrorCode.InvalidParams, message, data);

const notAsked = (key: string) => invalid(`The task does not ask ${key}`, { reason: 'not_asked' });

function asElicitResult(value: unknown, key: string): ElicitResult {
  const v = value as { action?: unknown; content?: unknown } | null;
  if (!v || typeof v !== 'object' || !['accept', 'decline', 'cancel'].includes(String(v.action))) {
    throw invalid(`inputResponses.${key} must be an elicitation result (action accept, decline or cancel)`);
  }
  if (v.content !== undefined && (typeof v.content !== 'object' || v.content === null || Array.isArray(v.content))) {
    throw invalid(`inputResponses.${key}.content must be an object`);
  }
  return v as ElicitResult;
}

/** The answers of a tasks/update, each recorded as `caller`'s (who decided or answered). */
export async function answerTaskInputs(
  deps: AgentCallDeps, caller: Caller, run: RunView, responses: Record<string, unknown>,
): Promise<void> {
  const keys = Object.keys(responses);
  if (keys.length === 0) throw invalid('tasks/update carries no inputResponses');
  if (keys.length > MAX_ANSWERS) throw invalid(`tasks/update carries more than ${MAX_ANSWERS} inputResponses`);
  for (const key of keys) {
    const result = asElicitResult(responses[key], key);
    try {
      if (key.startsWith('approval:')) await decideAsked(deps, caller, run, key, result);
      else if (key.startsWith('input:')) await answerAsked(deps, caller, run, key, result);
      else throw notAsked(key.slice(0, 200));
    } catch (err) {
      throw clientError(err);
    }
  }
}

/** An answer to an approval form: the decision it names (a dismissed form decides nothing). */
async function decideAsked(deps: AgentCallDeps, caller: Caller, run: RunView, key: string, result: ElicitResult): Promise<void> {
  const toolCallId = key.slice('approval:'.length);
  if (!run.pendingApprovals.some((a) => a.toolCallId === toolCallId)) throw notAsked(key);
  const decision = decisionOf(result);
  if (!decision) return;
  const reason = decision.reason?.slice(0, REASON_CHARS);
  await decideOverMcp(deps, caller, {
    runId: run.id, toolCallId, decision: decision.decision, ...(reason ? { reason } : {}), keyKind: 'mcp_client',
  });
}

/** An answer to an MCP server's question, as POST /v1/runs/:id/inputs/:inputId takes it. */
async function answerAsked(deps: AgentCallDeps, caller: Caller, run: RunView, key: string, result: ElicitResult): Promise<void> {
  const inputId = key.slice('input:'.length);
  if (!run.pendingInputs.some((i) => i.inputId === inputId)) throw notAsked(key);
  const onSignalFailed = (err: unknown) => deps.logger.warn({ err, runId: run.id }, 'an answer did not reach its run; its wait finds it');
  const content = result.content ? { content: result.content as Record<string, unknown> } : {};
  await answerOverMcp({ ...deps, onSignalFailed }, caller, run.id, inputId, { action: result.action, ...content });
}
