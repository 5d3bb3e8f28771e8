import { callerToolText, SCHEMA_CHECK_TIMEOUT_MS, type CallerTool } from '../../core/caller-tools';
import { toolResultText } from '../../core/tool-texts';
import { compileSchema } from '../../platform/json-schema-check';
import { findRunCallerTools, insertCallerToolCall } from '../../store/caller-tools';
import { appendEvent } from '../../store/runs/events';
import type { ToolHandler } from '../tool-handler';

interface Request {
  tool: CallerTool;
  arguments: Record<string, unknown>;
  timeoutMs: number;
}

/** The validator's words for the model: `arguments` where it says `data`. */
const asArguments = (problem: string) => problem.replace(/\bdata(?=[/ ]|$)/g, 'arguments');

/**
 * A call of a caller tool (core/caller-tools.ts): the model's arguments are checked against the
 * tool's schema here, in an activity (invalid ones go back to the model as a tool error, and never
 * reach the caller); then the call is stored, pending, and caller_tool_call said on the run's
 * events. The workflow waits for the caller's answer with no activity running
 * (workflows/caller-tool-wait.ts), and records it as the result (activities/caller-tool-result.ts).
 */
export const callerToolCall: ToolHandler<Request> = {
  span: () => 'caller_tool_call',
  async check(args, input, deps) {
    const declared = await findRunCallerTools(deps.db, input.runId);
    const tool = declared?.tools.find((t) => t.name === input.name);
    if (!declared || !tool) return { status: 'error', content: toolResultText.unknownTool(input.name) };
    const compiled = compileSchema(tool.inputSchema, SCHEMA_CHECK_TIMEOUT_MS);
    if ('problem' in compiled) {
      return { status: 'error', content: callerToolText.failed(input.name, `its inputSchema: ${compiled.problem}`) };
    }
    const problem = compiled.check(args);
    if (problem) return { status: 'error', content: callerToolText.invalidArguments(input.name, asArguments(problem)) };
    return { request: { tool, arguments: args, timeoutMs: declared.timeoutMs }, logFields: { callerTool: input.name } };
  },
  logFields: () => ({}),
  async execute(request, { input, deps }) {
    const call = await insertCallerToolCall(deps.db, {
      runId: input.runId, toolCallId: input.toolCallId, turn: input.turn, slot: input.index + 1, name: input.name,
      arguments: request.arguments, timeoutMs: request.timeoutMs,
    });
    // Tool call ids are the model's: one used twice in a run cannot be answered apart.
    if (call.turn !== input.turn || call.slot !== input.index + 1) {
      const reused = `the tool call id ${input.toolCallId} was used before in this run`;
      return { status: 'error', content: callerToolText.failed(input.name, reused) };
    }
    // Between the call's tool_call_started and tool_call_ended (core/tool-call.ts endedSeqOf); after the row, so that an
    // answer sent as soon as the event is read finds its call.
    if (input.callerEvents) {
      await appendEvent(deps.db, input.runId, input.eventSeq + 1, 'caller_tool_call', {
        turn: input.turn, toolCallId: input.toolCallId, name: input.name, arguments: call.arguments, askedAt: call.askedAt,
        expiresAt: call.expiresAt,
      });
    }
    // A retried activity may find its call answered already: the workflow then records the answer at once.
    const left = call.status === 'pending' ? Math.max(0, Date.parse(call.expiresAt) - Date.now()) : 0;
    return { status: 'ok', content: '', caller: { timeoutMs: left } };
  },
};
