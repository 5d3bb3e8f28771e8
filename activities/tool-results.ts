import { ApplicationFailure } from '@temporalio/activity';
import { appendEvent, findToolCall, getRunMessage, putRunMessage, putToolCall, type ToolCallRecord } from '../core/db/run-store';
import type { ToolCall } from '../core/messages';
import type { Queryable } from '../core/db/pool';
import type { RecordToolResultInput, ToolCallRef, ToolOutcome } from '../workflows/definitions';
import type { ToolType } from '../workflows/tool-routing';
import { RESULT_PREVIEW_BYTES, truncateUtf8, utf8Length } from '../workflows/tool-results';
import type { ActivityDeps } from './deps';

export interface ToolResult {
  type: ToolType;
  integrationId?: string;
  status: 'ok' | 'error';
  content: string;
  durationMs: number;
}

/**
 * A tool call by reference: either the outcome already stored for it (the worker died after
 * storing but before reporting: the tool must not run again), or the call with its arguments,
 * which stay in run_messages and never pass through the workflow.
 */
export async function loadToolCall(db: Queryable, ref: ToolCallRef): Promise<{ stored: ToolCallRecord } | { call: ToolCall }> {
  const { runId, turn, index } = ref;
  const stored = await findToolCall(db, runId, turn, index + 1);
  if (stored) return { stored };
  const assistant = await getRunMessage(db, runId, turn, 0);
  const call = assistant?.role === 'assistant' ? assistant.toolCalls?.[index] : undefined;
  if (!call) throw ApplicationFailure.nonRetryable(`Tool call ${index} of turn ${turn} is not in run ${runId}`, 'ToolCallNotFound');
  return { call };
}

export const storedOutcome = (stored: ToolCallRecord): ToolOutcome => ({
  status: stored.status, preview: stored.result, resultBytes: stored.resultBytes, durationMs: stored.durationMs,
});

export async function recordToolStarted(db: Queryable, ref: ToolCallRef, type: ToolType, integrationId?: string): Promise<void> {
  await appendEvent(db, ref.runId, ref.eventSeq, 'tool_call_started', {
    turn: ref.turn, toolCallId: ref.toolCallId, name: ref.name, type, integrationId: integrationId ?? null,
  });
}

/** Writes a tool result in full to the transcript and returns what the workflow keeps: a preview. */
export async function storeToolResult(db: Queryable, ref: ToolCallRef, result: ToolResult): Promise<ToolOutcome> {
  const resultBytes = utf8Length(result.content);
  const preview = truncateUtf8(result.content, RESULT_PREVIEW_BYTES);
  await putRunMessage(db, ref.runId, ref.turn, ref.index + 1, {
    role: 'tool', toolCallId: ref.toolCallId, name: ref.name, content: result.content,
  });
  await putToolCall(db, ref.runId, {
    id: ref.toolCallId, turn: ref.turn, slot: ref.index + 1, name: ref.name, type: result.type,
    integrationId: result.integrationId ?? null, status: result.status, durationMs: result.durationMs,
    result: preview, resultBytes,
  });
  await appendEvent(db, ref.runId, ref.eventSeq + 1, 'tool_call_ended', {
    turn: ref.turn, toolCallId: ref.toolCallId, name: ref.name, type: result.type,
    integrationId: result.integrationId ?? null, status: result.status, durationMs: result.durationMs,
  });
  return { status: result.status, preview, resultBytes, durationMs: result.durationMs };
}

export function createToolResultActivities({ db }: ActivityDeps) {
  return {
    /** Records a result decided by the workflow itself (unknown tool, configuration error). */
    async recordToolResult(input: RecordToolResultInput): Promise<ToolOutcome> {
      await recordToolStarted(db, input, input.type, input.integrationId);
      return storeToolResult(db, input, {
        type: input.type, integrationId: input.integrationId, status: input.status, content: input.content, durationMs: 0,
      });
    },
  };
}
