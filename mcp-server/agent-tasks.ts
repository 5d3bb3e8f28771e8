import {
  MissingRequiredClientCapabilityError, ProtocolError, ProtocolErrorCode, type CallToolResult, type ElicitRequestParams, type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { ExtTasks } from '../platform/ext-tasks';
import type { ExposedAgent } from '../use-cases/agents/exposed-agents';
import { findTaskRun, pageTaskRuns, recordAgentTask, type AgentTask, type TaskRun, type TaskScope } from '../use-cases/runs/agent-tasks';
import type { RunView } from '../core/run-view';
import { readRun, readRunWhenEnded, cancelRun } from '../use-cases/runs/runs';
import { beginAgentRun, resumeAgentCall, runOutcome, cancelWorkflow } from './agent-call';
import type { Caller } from '../use-cases/caller';
import type { AgentCallContext, AgentCallDeps } from './call-context';
import { approvalForm } from './approval-elicitation';
import { requestCapabilities } from './approval-input';
import { shortened } from '../core/truncated-text';
import { answerTaskInputs } from './task-inputs';

/**
 * Agent runs as MCP tasks, both eras, in one place. A task is a run (its id is the run's id) that
 * an MCP client started with a task-augmented tools/call; agent_tasks records its scope and ttl.
 * Everything else is read from the run, so any API process answers any task, after any restart.
 * 2025-11-25: the `tasks` capability (tasks/get, tasks/result, tasks/list, tasks/cancel).
 * 2026-07-28: the tasks extension (tasks/get with the result inline, tasks/update, tasks/cancel).
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';
export const DEFAULT_TTL_MS = 24 * 3600_000;
const MIN_TTL_MS = 60_000;
const MAX_TTL_MS = 7 * 24 * 3600_000;
export const POLL_MS = 2_000;
const LIST_PAGE = 50;
/** a task's statusMessage: enough to say what it waits for */
const MESSAGE_CHARS = 500;
/** how long tasks/cancel waits for the run to close before answering with where it stands */
const CANCEL_WAIT_MS = 10_000;

export interface AgentTaskOptions {
  /** the tasks library's schemas, loaded once (an ES module: platform/ext-tasks.ts) */
  ext: ExtTasks;
  /** whose tasks a request sees: the key kind it carried, or local (stdio, loopback without keys) */
  scope: TaskScope;
  /**
   * 2025 era on a connection that lives (stdio): the status of each task it starts is sent as
   * `notifications/tasks/status` when it changes, until the task ends or this signal aborts
   */
  notifyUntil?: AbortSignal;
}

type Era = 'legacy' | 'modern';
type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

const unknownTask = () => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Unknown task');

/** Whether a tools/call asks to run as a task: 2025, `params.task`; 2026, the extension in the request's capabilities. */
export function asksForTask(era: Era, params: Record<string, unknown> | undefined, ctx: ServerContext): boolean {
  if (era === 'legacy') return typeof params?.task === 'object' && params.task !== null;
  const extensions = (requestCapabilities(ctx) as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  return extensions !== undefined && TASKS_EXTENSION in extensions;
}

/** 2026: the task methods answer only requests that declare the extension (-32021 otherwise, as the extension says). */
function declaresExtension(ctx: ServerContext): void {
  if (asksForTask('modern', undefined, ctx)) return;
  throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } } as never,
    `This request does not declare the ${TASKS_EXTENSION} extension`);
}

const metaOf = (run: Pick<RunView, 'id' | 'threadId' | 'agentId'>) => ({ runId: run.id, threadId: run.threadId, agentId: run.agentId });

/** The task's status, read from its run; a failed run is `completed` (an error result) in the 2026 extension. */
function statusOf(run: RunView, era: Era): Status {
  if (run.status === 'running') return run.pendingApprovals.length + run.pendingInputs.length > 0 ? 'input_required' : 'working';
  if (run.status === 'failed') return era === 'modern' ? 'completed' : 'failed';
  return run.status;
}

/**
 * When the task's status last changed: its run's end, or the latest question it waits on; never
 * before the task was created (its row is written after its run's, which may even end first).
 */
function lastUpdatedAt(task: AgentTask, run: RunView): string {
  const changed = run.endedAt ?? [...run.pendingApprovals, ...run.pendingInputs].map((p) => p.requestedAt).sort().at(-1);
  return changed !== undefined && Date.parse(changed) > Date.parse(task.createdAt) ? changed : task.createdAt;
}

function statusMessage(run: RunView): string | undefined {
  if (run.pendingApprovals.length > 0) return `Waiting for approval of ${run.pendingApprovals[0].name}`;
  if (run.pendingInputs.length > 0) return shortened(run.pendingInputs[0].message, MESSAGE_CHARS);
  if (run.status === 'failed') return shortened(run.error?.message ?? 'The agent run failed', MESSAGE_CHARS);
  return undefined;
}


type InputRequest = { method: 'elicitation/create'; params: ElicitRequestParams };

/** What a 2026-era client is asked: each pending approval (a decision form) and each server's question, by key. */
export function inputRequestsOf(run: RunView): Record<string, InputRequest> {
  const requests: Record<string, InputRequest> = {};
  for (const a of run.pendingApprovals) {
    requests[`approval:${a.toolCallId}`] = { method: 'elicitation/create', params: approvalForm(a.name, a.arguments) };
  }
  for (const i of run.pendingInputs) {
    requests[`input:${i.inputId}`] = {
      method: 'elicitation/create',
      params: i.mode === 'url'
        ? { mode: 'url', message: i.message, url: i.url ?? '', elicitationId: i.inputId }
        : { mode: 'form', message: i.message, requestedSchema: (i.requestedSchema ?? { type: 'object', properties: {} }) as never },
    };
  }
  return requests;
}

function taskBody(task: AgentTask, run: RunView, era: Era) {
  const status = statusOf(run, era);
  const message = statusMessage(run);
  const base = {
    taskId: task.runId, status, createdAt: task.createdAt, lastUpdatedAt: lastUpdatedAt(task, run),
    ...(message ? { statusMessage: message } : {}),
  };
  if (era === 'legacy') return { ...base, ttl: task.ttlMs, pollInterval: task.pollMs };
  return { ...base, ttlMs: task.ttlMs, pollIntervalMs: task.pollMs };
}

/** The 2026 extension's detailed task: the questions while it asks, the result once it is done. */
function detailedTask(task: AgentTask, run: RunView) {
  const body = taskBody(task, run, 'modern');
  if (body.status === 'input_required') return { ...body, inputRequests: inputRequestsOf(run) };
  if (body.status === 'completed') return { ...body, result: { resultType: 'complete', ...runOutcome(run, metaOf(run)) } };
  return body;
}

/** Tells the connection each change of a task's status (2025 era, stdio), until the task ends or the connection closes. */
async function sendStatusChanges(server: Server, deps: AgentCallDeps, task: AgentTask, stop: AbortSignal): Promise<void> {
  const watch = deps.changes.watch(task.runId, ['event', 'progress', 'ended']);
  let last: Status | undefined = 'working';
  try {
    while (!stop.aborted) {
      await watch.next(5_000, stop);
      const run = await readRun(deps.db, task.runId);
      if (!run || stop.aborted) return;
      const body = taskBody(task, run, 'legacy');
      if (body.status !== last) {
        last = body.status;
        await server.notification({ method: 'notifications/tasks/status', params: body });
      }
      if (run.status !== 'running') return;
    }
  } finally {
    watch.close();
  }
}

/**
 * Starts the agent's run as a task and answers at once. Arguments the agent refuses get the
 * plain error result, as a call without a task would: no run, so no task.
 */
export async function startAgentTask(
  server: Server, deps: AgentCallDeps, agent: ExposedAgent, args: Record<string, unknown>, era: Era, options: AgentTaskOptions,
  caller: Caller, requestedTtl?: unknown,
): Promise<Record<string, unknown>> {
  const started = await beginAgentRun(deps, agent, args, undefined, caller);
  if ('refused' in started) return started.refused;
  const ttlMs = typeof requestedTtl === 'number' && Number.isFinite(requestedTtl)
    ? Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, Math.round(requestedTtl))) : DEFAULT_TTL_MS;
  let task: AgentTask;
  try {
    task = await recordAgentTask(deps.db, { runId: started.runId, scope: options.scope, ttlMs, pollMs: POLL_MS });
  } catch (err) {
    // A run no client can find would go on unseen.
    await cancelWorkflow(deps, started.runId);
    throw err;
  }
  const run = await readRun(deps.db, started.runId);
  if (!run) throw new Error(`run ${started.runId} vanished as it started`);
  const body = taskBody(task, run, era);
  if (era === 'legacy' && options.notifyUntil) {
    const stop = options.notifyUntil;
    void sendStatusChanges(server, deps, task, stop).catch((err: unknown) => {
      if (!stop.aborted) deps.logger.debug({ err, runId: task.runId }, 'a task status notification was not sent');
    });
  }
  return era === 'legacy'
    ? { task: body, _meta: { [RELATED_TASK_META]: { taskId: task.runId }, ...started.meta } }
    : { resultType: 'task', ...body };
}

async function taskAndRun(deps: AgentCallDeps, scope: TaskScope, taskId: string): Promise<TaskRun> {
  const found = taskId.length > 128 ? undefined : await findTaskRun(deps.db, scope, taskId);
  if (!found) throw unknownTask();
  return found;
}

/** 2025: a task that has ended is refused (-32602); 2026: the cancel of an ended task is acknowledged as any other. */
async function cancelTask(deps: AgentCallDeps, scope: TaskScope, taskId: string, era: Era): Promise<{ task: AgentTask; run: RunView }> {
  const { task, run } = await taskAndRun(deps, scope, taskId);
  if (run.status !== 'running') {
    if (era === 'modern') return { task, run };
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Cannot cancel task: it is already ${statusOf(run, 'legacy')}`);
  }
  await cancelRun(deps, taskId);
  const after = await readRunWhenEnded(deps, taskId, CANCEL_WAIT_MS);
  return { task, run: after ?? run };
}

const cursorOf = (t: AgentTask) => Buffer.from(`${t.position}:${t.runId}`).toString('base64url');

function afterCursor(cursor: unknown): { position: string; runId: string } | undefined {
  if (cursor === undefined) return undefined;
  const text = typeof cursor === 'string' && cursor.length <= 400 ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = /^(\d{1,20}):([A-Za-z0-9_]{1,128})$/.exec(text);
  if (!match) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
  return { position: match[1], runId: match[2] };
}

/**
 * Registers the task methods of the instance's era. `follow` is how tasks/result (2025) follows
 * the run to its end: over stdio it asks the client the run's approvals meanwhile.
 */
export function registerTaskHandlers(
  server: Server, deps: AgentCallDeps, era: Era, options: AgentTaskOptions, follow: (ctx: ServerContext) => AgentCallContext,
): void {
  const { v1, v2 } = options.ext;
  const { scope } = options;
  if (era === 'modern') {
    server.setRequestHandler('tasks/get', { params: v2.GetTaskRequestV2Schema.shape.params }, async ({ taskId }, ctx) => {
      declaresExtension(ctx);
      const { task, run } = await taskAndRun(deps, scope, taskId);
      return { resultType: 'complete', ...detailedTask(task, run) };
    });
    // The answers come as the request's inputResponses, which the SDK hands over apart from its params.
    server.setRequestHandler('tasks/update', { params: v2.GetTaskRequestV2Schema.shape.params }, async ({ taskId }, ctx) => {
      declaresExtension(ctx);
      const { run } = await taskAndRun(deps, scope, taskId);
      await answerTaskInputs(deps, follow(ctx).caller, run, (ctx.mcpReq.inputResponses ?? {}) as Record<string, unknown>);
      return { resultType: 'complete' };
    });
    server.setRequestHandler('tasks/cancel', { params: v2.CancelTaskRequestV2Schema.shape.params }, async ({ taskId }, ctx) => {
      declaresExtension(ctx);
      await cancelTask(deps, scope, taskId, 'modern');
      return { resultType: 'complete' };
    });
    return;
  }
  server.setRequestHandler('tasks/get', { params: v1.GetTaskRequestV1Schema.shape.params }, async ({ taskId }) => {
    const { task, run } = await taskAndRun(deps, scope, taskId);
    return taskBody(task, run, 'legacy');
  });
  server.setRequestHandler('tasks/result', { params: v1.GetTaskResultRequestV1Schema.shape.params }, async ({ taskId }, ctx) => {
    const { run } = await taskAndRun(deps, scope, taskId);
    // While it waits, a client that can be asked (stdio) is asked the run's approvals, naming the task.
    const live = follow(ctx);
    const ask = live.ask;
    const related = { [RELATED_TASK_META]: { taskId } };
    const naming: Partial<AgentCallContext> = ask
      ? { ask: (params, signal) => ask({ ...params, _meta: { ...params._meta, ...related } }, signal) }
      : {};
    const result: CallToolResult = run.status === 'running'
      ? await resumeAgentCall(deps, taskId, { ...live, progress: undefined, ...naming }) as CallToolResult
      : runOutcome(run, metaOf(run));
    return { ...result, _meta: { ...result._meta, ...related } };
  });
  server.setRequestHandler('tasks/cancel', { params: v1.CancelTaskRequestV1Schema.shape.params }, async ({ taskId }) => {
    const { task, run } = await cancelTask(deps, scope, taskId, 'legacy');
    return taskBody(task, run, 'legacy');
  });
  server.setRequestHandler('tasks/list', { params: v1.ListTasksRequestV1Schema.shape.params }, async (params) => {
    const page = await pageTaskRuns(deps.db, scope, LIST_PAGE, afterCursor(params?.cursor));
    const tasks = page.tasks.map(({ task, run }) => taskBody(task, run, 'legacy'));
    return { tasks, ...(page.more && page.last ? { nextCursor: cursorOf(page.last) } : {}) };
  });
}
