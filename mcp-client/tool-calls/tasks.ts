import type { CallToolResult, Client, Tool } from '@modelcontextprotocol/client';
import type { TaskController, TaskView, ToolExecution } from '@modelcontextprotocol/ext-tasks/client' with { 'resolution-mode': 'import' };
import type { JsonValue } from '@modelcontextprotocol/ext-tasks/core' with { 'resolution-mode': 'import' };
import { extTasks } from '../../platform/ext-tasks';
import {
  asCallToolResult, boundedMessage, decodeReference, encodeReference, isTaskStatus, pollInterval, TaskReferenceError, tooLargeText,
  withinBytes,
} from './task-reference';
import { withTaskSession, type TaskEndpoint } from './task-session';

/**
 * Long tool calls as tasks (MCP 2025-11-25 tasks; the 2026-07-28 tasks extension), through
 * @modelcontextprotocol/ext-tasks: start a call as a task and keep only a small serialized
 * reference, then poll or cancel it later, from any connection to the same server, in any worker
 * process. Everything the server says about a task is bounded before the engine keeps it.
 */

export type { TaskEndpoint } from './task-session';
export { TaskReferenceError } from './task-reference';
export { AsksBeforeTask } from './task-session';

export type TaskSupport = 'none' | 'optional' | 'required';

/** Whether a listed tool may run as a task on this connection. */
export async function toolTaskSupport(client: Client, tool: Tool): Promise<TaskSupport> {
  const ext = await extTasks();
  const capabilities = client.getServerCapabilities();
  if (client.getProtocolEra() === 'modern') {
    // The extension declares nothing per tool: the server decides, call by call, whether to answer with a task.
    return ext.v2.hasTaskServerCapabilityV2(capabilities) ? 'optional' : 'none';
  }
  const tasks = ext.v1.ServerTaskCapabilitiesV1Schema.safeParse(capabilities?.tasks);
  if (!tasks.success || !ext.v1.hasTaskToolCallCapabilityV1(tasks.data)) return 'none';
  try {
    const support = ext.client.toolDeclarationFromMcpTool(tool).taskSupport;
    return support === 'optional' || support === 'required' ? support : 'none';
  } catch {
    return 'none';
  }
}

export interface ToolCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** the request's `_meta` (the engine's idempotency key) */
  _meta?: Record<string, string>;
}

interface RequestOptions {
  /** per request to the server */
  requestTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface StartToolTaskOptions extends TaskEndpoint, RequestOptions {
  /** the bound on a result the server answers with at once (its JSON, in bytes) */
  maxResultBytes: number;
  /** the tool as listed, which decides (2025 era) whether to ask for a task; without it the client lists the tools */
  tool?: Tool;
  /** how long the server is asked to keep the task and its result (2025 era: a request it may shorten) */
  retentionMs?: number;
}

export type StartedToolTask =
  | { reference: string; pollIntervalMs?: number }
  | { result: CallToolResult };

/**
 * Calls a tool, asking for a task where the tool allows one. A server may answer at once instead
 * (a tool without task support, or one the server chooses to run now): that result comes back as
 * is. Otherwise the reference is all there is to keep; the call does not wait for the task.
 */
export async function startToolTask(client: Client, call: ToolCall, options: StartToolTaskOptions): Promise<StartedToolTask> {
  const tool = options.tool ?? (await client.listTools()).tools.find((t) => t.name === call.name);
  return withTaskSession(client, options, tool, async ({ session, plainAnswer }) => {
    let execution: ToolExecution<unknown>;
    try {
      execution = await session.callTool(call.name, jsonArguments(call.arguments), {
        task: { preference: 'prefer', ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }) },
        ...(call._meta ? { metadata: call._meta } : {}),
        ...requestOptions(options),
      });
    } catch (err) {
      const plain = plainAnswer();
      if (plain === undefined) throw err;
      return { result: boundedResult(plain, options.maxResultBytes) };
    }
    if (execution.kind === 'immediate') {
      const outcome = await execution.result();
      if (outcome.status === 'completed') return { result: boundedResult(outcome.result, options.maxResultBytes) };
      throw outcome.status === 'failed' ? outcome.error : new Error('the tool call was cancelled');
    }
    // The first update is the task as created; read before the handoff, which ends the updates.
    const created = await firstTask(execution);
    let reference = '';
    // A reference too large to keep fails the handoff: the session's close then cancels the task, which nobody could poll.
    await execution.handoff((serialized) => { reference = encodeReference(serialized); });
    // The handed-off execution winds down before the session closes: closing a live one would cancel the task.
    await execution.result();
    const pollIntervalMs = pollInterval(created?.suggestedPollIntervalMs);
    return { reference, ...(pollIntervalMs === undefined ? {} : { pollIntervalMs }) };
  });
}

export type ToolTaskStatus =
  | { status: 'working'; pollIntervalMs?: number }
  | {
    status: 'input_required';
    /**
     * 2026 era: the questions, by key, as the server put them (they are answered with tasks/update,
     * which is not built here). 2025 era: none (see pollToolTask).
     */
    inputRequests?: Record<string, unknown>;
    message?: string;
    pollIntervalMs?: number;
  }
  | { status: 'completed'; result: CallToolResult }
  | { status: 'failed'; message: string }
  | { status: 'cancelled' };

export interface PollToolTaskOptions extends TaskEndpoint, RequestOptions {
  /** the bound on the result (and on input requests), as JSON bytes: past it the task reads as failed */
  maxResultBytes: number;
}

/**
 * Where a task stands, from its reference alone, over any connection to its server. A finished
 * task's result is fetched with it. A server or transport failure is thrown; a task's failure is a
 * status.
 */
export async function pollToolTask(client: Client, reference: string, options: PollToolTaskOptions): Promise<ToolTaskStatus> {
  const ref = decodeReference(reference, options.endpointId);
  return withTaskSession(client, options, undefined, async ({ session, generation }) => {
    sameGeneration(ref.generation, generation);
    // A task controller reads the task once; resumeTask() would start an owning driver that polls on
    // in the background and (2026 era) answers the server's questions with "cancel" when no handler
    // is set.
    const controller = session.task(ref.taskId, requestTimeout(options));
    return taskStatus(controller, await controller.snapshot(options.signal), options);
  });
}

/** What a task's snapshot says, within the bounds; a completed task's result is fetched with it. */
async function taskStatus(controller: TaskController, view: TaskView, options: PollToolTaskOptions): Promise<ToolTaskStatus> {
  if (!isTaskStatus(view.status)) return { status: 'failed', message: 'the MCP server reported a task status this engine does not know' };
  const pollIntervalMs = pollInterval(view.suggestedPollIntervalMs);
  const every = pollIntervalMs === undefined ? {} : { pollIntervalMs };
  switch (view.status) {
    case 'working':
      return { status: 'working', ...every };
    case 'input_required':
      return inputRequired(view, options.maxResultBytes, every);
    case 'cancelled':
      return { status: 'cancelled' };
    case 'failed':
      return { status: 'failed', message: failureText(view) };
    case 'completed':
      return completedTask(controller, options);
  }
}

function inputRequired(view: TaskView, max: number, every: { pollIntervalMs?: number }): ToolTaskStatus {
  // 2025 era: the server asks its questions as requests while tasks/result is open, which a poll does not open.
  const inputRequests = view.raw.inputRequests;
  if (inputRequests !== undefined && withinBytes(inputRequests, max) === undefined) {
    return { status: 'failed', message: `input requests exceed ${max} bytes` };
  }
  return {
    status: 'input_required',
    ...(isRecord(inputRequests) ? { inputRequests } : {}),
    ...(view.statusMessage ? { message: boundedMessage(view.statusMessage, '') } : {}),
    ...every,
  };
}

async function completedTask(controller: TaskController, options: PollToolTaskOptions): Promise<ToolTaskStatus> {
  const max = options.maxResultBytes;
  const outcome = await controller.result({ ...(options.signal ? { signal: options.signal } : {}) });
  if (outcome.status === 'cancelled') return { status: 'cancelled' };
  if (outcome.status === 'failed') return { status: 'failed', message: boundedMessage(outcome.error.message, 'the task failed') };
  if (withinBytes(outcome.result, max) === undefined) return { status: 'failed', message: tooLargeText(max) };
  return { status: 'completed', result: asCallToolResult(outcome.result) };
}

/** Answers a 2026-era task's questions (tasks/update), keyed as its inputRequests were. */
export async function answerToolTask(
  client: Client, reference: string, inputResponses: Record<string, unknown>, options: TaskEndpoint & RequestOptions,
): Promise<void> {
  const ref = decodeReference(reference, options.endpointId);
  await withTaskSession(client, options, undefined, async ({ session, generation }) => {
    sameGeneration(ref.generation, generation);
    const controller = session.task(ref.taskId, requestTimeout(options));
    await controller.updateJson(JSON.parse(JSON.stringify(inputResponses)), options.signal);
  });
}

/** Asks the server to cancel a task (it may already have finished: the server then refuses, which is thrown). */
export async function cancelToolTask(client: Client, reference: string, options: TaskEndpoint & RequestOptions): Promise<void> {
  const ref = decodeReference(reference, options.endpointId);
  await withTaskSession(client, options, undefined, async ({ session, generation }) => {
    sameGeneration(ref.generation, generation);
    await session.cancelTask(ref.taskId, options.signal);
  });
}

const ERA = { v1: '2025-11-25', v2: '2026-07-28', none: 'a server without tasks' } as const;

function sameGeneration(referenced: 'v1' | 'v2', connected: 'none' | 'v1' | 'v2'): void {
  if (referenced !== connected) {
    throw new TaskReferenceError(`task reference is of the ${ERA[referenced]} era; this connection is to ${ERA[connected]}`);
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

function failureText(view: TaskView): string {
  const error = view.raw.error;
  return boundedMessage(isRecord(error) ? error.message : view.statusMessage, 'the task failed');
}

function boundedResult(result: unknown, maxBytes: number): CallToolResult {
  if (withinBytes(result, maxBytes) === undefined) throw new Error(tooLargeText(maxBytes));
  return asCallToolResult(result);
}

async function firstTask(execution: ToolExecution<unknown>): Promise<TaskView | undefined> {
  const updates = execution.updates()[Symbol.asyncIterator]();
  const first = await updates.next();
  await updates.return?.();
  return !first.done && first.value.type === 'task' ? first.value.task : undefined;
}

/** Tool arguments as ext-tasks takes them: JSON (what a model produced, or a workflow kept). */
function jsonArguments(args: Record<string, unknown> | undefined): Record<string, JsonValue> | undefined {
  return args === undefined ? undefined : JSON.parse(JSON.stringify(args));
}

function requestTimeout(options: RequestOptions): { requestTimeoutMs?: number } {
  return options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs };
}

function requestOptions(options: RequestOptions): { requestTimeoutMs?: number; signal?: AbortSignal } {
  return { ...requestTimeout(options), ...(options.signal ? { signal: options.signal } : {}) };
}
