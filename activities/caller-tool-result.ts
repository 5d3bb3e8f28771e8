import type { CallToolResult } from '@modelcontextprotocol/client';
import { callerToolText, DEFAULT_CALLER_TOOL_TIMEOUT_MS, MAX_CALLER_TOOL_RESULT_BYTES } from '../core/caller-tools';
import { formatDuration } from '../core/duration';
import type { ToolOutcome } from '../core/tool-call';
import { toolResultContentText } from '../mcp-client/tool-result-text';
import { clearCallerToolAnswer, endCallerToolCall, findRunCallerTools, type CallerToolAnswer } from '../store/caller-tools';
import { findToolCallAndRequest } from '../store/runs/tool-calls';
import type { ActivityDeps } from './deps';
import { storeToolResult } from './tool-call';
import type { ToolActivityInput, ToolResult } from './tool-handler';

/**
 * What the model reads of a caller's answer: its content blocks as an MCP tool result's (text
 * joined, placeholders for binary content), within an MCP result's bound; `isError` makes it a
 * failed call, in the caller's own words.
 */
export function callerAnswerResult(name: string, answer: CallerToolAnswer): ToolResult {
  const text = toolResultContentText({ content: answer.content } as CallToolResult);
  if (Buffer.byteLength(text) > MAX_CALLER_TOOL_RESULT_BYTES) {
    return { status: 'error', content: callerToolText.tooLarge(name, MAX_CALLER_TOOL_RESULT_BYTES) };
  }
  return { status: answer.isError ? 'error' : 'ok', content: text };
}

export function createCallerToolActivities({ db, logger }: ActivityDeps) {
  return {
    /**
     * A caller tool's call has its answer, or its wait timed out: the call's result, recorded as
     * any tool's. An answer recorded first wins over the timer (its signal may have come with it or
     * been lost). Local and idempotent: a result stored before stands, and the answer is cleared
     * once its result is recorded.
     */
    async recordCallerToolResult(input: ToolActivityInput): Promise<ToolOutcome> {
      const { route: _route, subAgent: _subAgent, ...ref } = input;
      const { stored } = await findToolCallAndRequest(db, ref.runId, ref.turn, ref.index + 1);
      if (stored) return { status: stored.status, resultBytes: stored.resultBytes };
      const end = await endCallerToolCall(db, ref.runId, ref.toolCallId, 'timed_out');
      let result: ToolResult;
      if (!end) result = { status: 'error', content: callerToolText.failed(ref.name, 'the call was not stored') };
      else if (end.answered) result = callerAnswerResult(ref.name, end.answered);
      else {
        const timeoutMs = (await findRunCallerTools(db, ref.runId))?.timeoutMs ?? DEFAULT_CALLER_TOOL_TIMEOUT_MS;
        result = { status: 'error', content: callerToolText.notAnswered(ref.name, formatDuration(timeoutMs)) };
      }
      const outcome = await storeToolResult(db, ref, { ...result, durationMs: end?.durationMs ?? 0 });
      await clearCallerToolAnswer(db, ref.runId, ref.toolCallId);
      logger.info({ runId: ref.runId, toolCallId: ref.toolCallId, answered: Boolean(end?.answered), status: result.status },
        'caller tool call ended');
      return outcome;
    },
  };
}
