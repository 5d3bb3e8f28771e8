import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { CALLER_TOOL_ANSWERED_SIGNAL, DEFAULT_CALLER_TOOL_TIMEOUT_MS, MAX_CALLER_TOOL_RESULT_BYTES } from '../../core/caller-tools';
import { EngineError } from '../../core/engine-error';
import {
  answerCallerToolCall, findCallerToolCall, findRunCallerTools, type CallerToolCallStatus,
} from '../../store/caller-tools';
import type { Queryable } from '../../store/pool';
import { requireRole, type Caller } from '../caller';
import { decidedByOf } from './approvals';
import { requireRunIn } from './runs';

/*
 * A caller's answer to a call of one of its run's caller tools (core/caller-tools.ts): check →
 * record (one conditional update: of two answers, exactly one wins) → tell. The content is stored
 * in PostgreSQL; the run's workflow is signalled the call's id, and only that. The answer does not
 * wait for a worker: the run records it as the call's result when it next runs.
 */

/** MCP content blocks (their shape checked by the API's schema), or plain text. */
export interface CallerToolResultRequest {
  content: Record<string, unknown>[] | string;
  isError?: boolean;
}

export interface CallerToolResultDeps {
  db: Queryable;
  client: Client;
  /** a signal that did not reach the run: the answer stands, and the run's wait finds it at its timer */
  onSignalFailed: (err: unknown) => void;
}

export interface AnsweredCallerTool {
  runId: string;
  toolCallId: string;
  name: string;
}

const STATUS_WORDS: Record<Exclude<CallerToolCallStatus, 'pending'>, string> = {
  answered: 'it was answered already', timed_out: 'its callerToolTimeout passed', cancelled: 'its run ended',
};

/** A placeholder's size for binary content, which the model reads as one line (mcp-client/tool-result-text.ts). */
const PLACEHOLDER_BYTES = 200;

/** At least as many bytes as the text the model will read of these blocks (the worker measures it exactly). */
function textBytes(blocks: Record<string, unknown>[]): number {
  const bytes = blocks.map((b) => {
    const resource = b.resource as { text?: unknown } | undefined;
    if (b.type === 'text' && typeof b.text === 'string') return Buffer.byteLength(b.text);
    if (b.type === 'resource' && typeof resource?.text === 'string') return Buffer.byteLength(resource.text);
    if (b.type === 'image' || b.type === 'audio' || b.type === 'resource') return PLACEHOLDER_BYTES;
    return Buffer.byteLength(JSON.stringify(b, null, 2));
  });
  return bytes.reduce((sum, n) => sum + n, Math.max(0, blocks.length - 1));
}

/**
 * Records the caller's answer to a pending call of a run of the caller's tenant (role run: who may
 * start a run may run its tools), then tells the run. Not found: another tenant's run, or no call
 * of a caller tool by that id; conflict: the call no longer waits (answered, timed out, its run ended).
 */
export async function answerCallerToolFor(
  deps: CallerToolResultDeps, caller: Caller, runId: string, toolCallId: string, answer: CallerToolResultRequest,
): Promise<AnsweredCallerTool> {
  requireRole(caller, 'run');
  await requireRunIn(deps.db, caller.tenantId, runId);
  const call = await findCallerToolCall(deps.db, runId, toolCallId);
  if (!call) throw new EngineError('not_found', `Run ${runId} has no call ${toolCallId} of a caller tool`);
  const content = typeof answer.content === 'string' ? [{ type: 'text', text: answer.content }] : answer.content;
  if (textBytes(content) > MAX_CALLER_TOOL_RESULT_BYTES) {
    throw new EngineError('validation', `body.content: the model would read more than ${MAX_CALLER_TOOL_RESULT_BYTES} bytes `
      + '(the bound on an MCP tool\'s result)', { field: 'body.content' });
  }
  const stored = { content, isError: answer.isError === true };
  const recorded = await answerCallerToolCall(deps.db, runId, toolCallId, stored, decidedByOf(caller));
  if (!recorded) {
    const now = (await findCallerToolCall(deps.db, runId, toolCallId))?.status ?? 'cancelled';
    const why = now === 'pending' ? STATUS_WORDS.cancelled : STATUS_WORDS[now];
    throw new EngineError('conflict', `Tool call ${toolCallId} no longer waits for a result: ${why}`, { callStatus: now });
  }
  try {
    await deps.client.workflow.getHandle(runId).signal(CALLER_TOOL_ANSWERED_SIGNAL, { toolCallId });
  } catch (err) {
    // A run that ended meanwhile no longer waits; anything else, the timer's check covers.
    if (!(err instanceof WorkflowNotFoundError)) deps.onSignalFailed(err);
  }
  return { runId, toolCallId, name: call.name };
}

/** The caller tools a run of the caller's tenant declared, and how long each call waits: what a caller needs to answer. */
export async function callerToolsFor(
  db: Queryable, caller: Caller, runId: string,
): Promise<{ callerTools: NonNullable<Awaited<ReturnType<typeof findRunCallerTools>>>['tools']; timeoutMs: number }> {
  requireRole(caller, 'read');
  await requireRunIn(db, caller.tenantId, runId);
  const declared = await findRunCallerTools(db, runId);
  return { callerTools: declared?.tools ?? [], timeoutMs: declared?.timeoutMs ?? DEFAULT_CALLER_TOOL_TIMEOUT_MS };
}
