import { Context } from '@temporalio/activity';
import { formatDuration } from '../../core/duration';
import type { Integration } from '../../core/integration';
import { mcpErrorText } from '../../core/mcp-error-text';
import { toolResultText } from '../../core/tool-texts';
import { decodeReference } from '../../mcp-client/tool-calls/task-reference';
import { answerToolTask, cancelToolTask, pollToolTask, TaskReferenceError } from '../../mcp-client/tool-calls/tasks';
import { clearRoundAnswers, readRoundAnswers } from '../../store/runs/input-rounds';
import { recordToolTaskPoll, type StoredToolTask } from '../../store/runs/tool-tasks';
import type { ActivityDeps } from '../deps';
import type { ToolResult } from '../tool-handler';
import { loadTask, requestTimeout, storeTaskResult, type TaskCancelInput, type TaskPoll, type TaskPollInput } from './mcp-task';
import { resultOfCall, unexpected } from './mcp-results';
import { askedAlready, storeTaskQuestions } from './task-questions';

/*
 * The short activities the workflow runs while a call's task works (workflows/task-wait.ts): a poll,
 * the answers to its questions, a cancel. Each is one request to the server.
 */

const GONE = 'the integration no longer exists or is disabled';

const isLegacyTask = (task: StoredToolTask, integration: Integration) =>
  decodeReference(task.reference, integration.id).generation === 'v1';

/** Best effort: a server that refuses (the task ended meanwhile) or cannot be reached leaves nothing to do. */
function cancelQuietly(deps: ActivityDeps, integration: Integration, task: StoredToolTask): Promise<unknown> {
  const options = { endpointId: integration.id, requestTimeoutMs: requestTimeout(integration) };
  return deps.mcpPool.withClient(integration, (client) => cancelToolTask(client, task.reference, options))
    .catch((err: Error) => {
      deps.logger.warn({ runId: task.runId, taskRefId: task.taskRefId, err: err.message }, 'cancelling an MCP task failed');
    });
}

/** Polls the task once: its result once it has ended (stored), its questions to wait for, or when to ask again. */
async function pollMcpTask(deps: ActivityDeps, input: TaskPollInput): Promise<TaskPoll> {
  const loaded = await loadTask(deps, input);
  if ('outcome' in loaded) return loaded;
  const { task, integration } = loaded;
  if (!integration) return { outcome: await storeTaskResult(deps, input, task, unexpected(GONE)) };
  let result: ToolResult;
  try {
    const found = await pollOnce(deps, input, task, integration);
    if (!('result' in found)) return found;
    result = found.result;
  } catch (err) {
    // A reference the server no longer knows, or one this engine cannot use: polling again cannot help.
    if (!(err instanceof TaskReferenceError)) throw err;
    result = unexpected(mcpErrorText(err));
  }
  const { runId, toolCallId } = input;
  deps.logger.info({ runId, toolCallId, taskRefId: task.taskRefId, polls: task.polls + 1, status: result.status }, 'MCP task ended');
  return { outcome: await storeTaskResult(deps, input, task, result) };
}

/** What the server says of the task: still working, asking, or ended with the result the LLM reads. */
async function pollOnce(
  deps: ActivityDeps, input: TaskPollInput, task: StoredToolTask, integration: Integration,
): Promise<TaskPoll | { result: ToolResult }> {
  const signal = Context.current().cancellationSignal;
  const polled = await deps.mcpPool.withClient(integration, (client) => pollToolTask(client, task.reference, {
    endpointId: integration.id, maxResultBytes: integration.maxResultBytes, requestTimeoutMs: requestTimeout(integration), signal,
  }));
  await recordToolTaskPoll(deps.db, task.taskRefId, polled.status);
  if (polled.status === 'input_required' && polled.inputRequests && !askedAlready(task, polled.inputRequests)) {
    const asked = await storeTaskQuestions(deps, input, task, integration, polled.inputRequests);
    if (asked.waiting) return { waiting: asked.waiting };
    // Questions the call cannot relay: the task is cancelled, and the LLM reads why.
    await cancelQuietly(deps, integration, task);
    return { outcome: await storeTaskResult(deps, input, task, asked) };
  }
  // A 2025-era task asks only over a held tasks/result, where a question can be relayed only when
  // the integration relays questions.
  if (polled.status === 'input_required' && !polled.inputRequests && integration.elicitation && isLegacyTask(task, integration)) {
    return { asksLive: true };
  }
  if (polled.status === 'working' || polled.status === 'input_required') {
    return polled.pollIntervalMs ? { pollIntervalMs: polled.pollIntervalMs } : {};
  }
  if (polled.status === 'completed') return { result: resultOfCall(polled.result, integration) };
  const message = polled.status === 'failed' ? polled.message : 'the MCP server cancelled the task';
  return { result: { status: 'error', content: toolResultText.mcpToolFailed(message) } };
}

/** Asks the server to cancel the task; for a task past its timeout, the LLM is told. Best effort toward the server. */
async function cancelMcpTask(deps: ActivityDeps, input: TaskCancelInput): Promise<TaskPoll> {
  const loaded = await loadTask(deps, input);
  if ('outcome' in loaded) return loaded;
  const { task, integration } = loaded;
  if (integration) await cancelQuietly(deps, integration, task);
  await recordToolTaskPoll(deps.db, task.taskRefId, input.reason === 'timeout' ? 'timed_out' : 'cancelled');
  if (input.reason === 'cancel') return {};
  const text = input.reason === 'abandon' && input.text ? input.text
    : toolResultText.mcpToolFailed(`the task did not finish within ${formatDuration(input.timeoutMs)}`);
  return { outcome: await storeTaskResult(deps, input, task, { status: 'error', content: text }) };
}

/** The answers to a task's questions, once the workflow has them all: sent to the task (tasks/update), then cleared. */
async function answerMcpTask(deps: ActivityDeps, input: TaskPollInput & { roundId: string }): Promise<TaskPoll> {
  const loaded = await loadTask(deps, input);
  if ('outcome' in loaded) return loaded;
  const { task, integration } = loaded;
  const answers = await readRoundAnswers(deps.db, input.roundId);
  if (!integration || !answers.answered) {
    const missing = unexpected(!integration ? GONE : `the answers of round ${input.roundId} are missing`);
    return { outcome: await storeTaskResult(deps, input, task, missing) };
  }
  await deps.mcpPool.withClient(integration, (client) => answerToolTask(client, task.reference, answers.responses, {
    endpointId: integration.id, requestTimeoutMs: requestTimeout(integration), signal: Context.current().cancellationSignal,
  }));
  await clearRoundAnswers(deps.db, input.roundId);
  deps.logger.info({ runId: input.runId, taskRefId: task.taskRefId, roundId: input.roundId }, 'answers relayed to the MCP task');
  return {};
}

export function createMcpTaskActivities(deps: ActivityDeps) {
  return {
    pollMcpTask: (input: TaskPollInput): Promise<TaskPoll> => pollMcpTask(deps, input),
    cancelMcpTask: (input: TaskCancelInput): Promise<TaskPoll> => cancelMcpTask(deps, input),
    answerMcpTask: (input: TaskPollInput & { roundId: string }): Promise<TaskPoll> => answerMcpTask(deps, input),
  };
}
