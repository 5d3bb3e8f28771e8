import type { InputWait, McpToolRoute, ToolOutcome } from '../../core/tool-call';
import type { Integration } from '../../core/integration';
import { idempotencyMeta } from '../../core/tool-call-ids';
import { AsksBeforeTask, startToolTask } from '../../mcp-client/tool-calls/tasks';
import { findIntegration } from '../../store/integrations/integrations';
import { findToolCallAndRequest } from '../../store/runs/tool-calls';
import { findToolTask, insertToolTask, type StoredToolTask } from '../../store/runs/tool-tasks';
import type { ActivityDeps } from '../deps';
import { storeToolResult } from '../tool-call';
import type { ToolActivityInput, ToolRun, ToolResult } from '../tool-handler';
import { resultOfFailure, resultOfCall } from './mcp-results';

/**
 * Long tool calls as tasks (MCP tasks). The call's activity asks the server for a task, stores its
 * reference in PostgreSQL and ends; the workflow polls it with short activities (workflows/task-wait.ts)
 * from any worker, with no activity running in between, and the poll that finds it finished stores
 * its result as any call's. A call is never sent twice: a start whose worker died is not retried
 * (unless the tool is safe to repeat), and polls only read.
 */

/** Each request to the server, a poll included, is bounded like a tool call's request (60 s by default). */
export const requestTimeout = (integration: Integration) => Math.min(integration.toolTimeoutMs, 60_000);

/** Whether an error, or one it was caused by, is the server asking before it starts a task. */
function asksFirst(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) if (e instanceof AsksBeforeTask) return true;
  return false;
}

/**
 * Starts the call as a task. `asks first`: the server wants answers before it starts one (2026 era),
 * and the caller makes the call the usual way, where its questions wait durably.
 */
export async function startTaskCall(
  integration: Integration, route: McpToolRoute, args: Record<string, unknown>, run: ToolRun,
): Promise<ToolResult | 'asks first'> {
  const { input } = run;
  // As the integration's connections declare them (2026: each request carries its own): so the server may ask.
  const clientCapabilities = {
    ...(integration.elicitation ? { elicitation: { form: {}, url: {} } } : {}),
    ...(integration.sampling !== 'never' ? { sampling: {} } : {}),
  };
  const options = {
    endpointId: integration.id, maxResultBytes: integration.maxResultBytes, requestTimeoutMs: requestTimeout(integration),
    signal: run.signal, clientCapabilities,
  };
  try {
    // The call's idempotency key, as its plain calls carry it (mcp-tool.ts).
    const call = { name: route.toolName, arguments: args, _meta: idempotencyMeta(input.runId, input.toolCallId) };
    const started = await run.deps.mcpPool.withClient(integration, (client) => startToolTask(client, call, options));
    // The server chose to answer at once.
    if ('result' in started) return resultOfCall(started.result, integration);
    const stored = await insertToolTask(run.deps.db, {
      runId: input.runId, toolCallId: input.toolCallId, turn: input.turn, slot: input.index + 1, integrationId: integration.id,
      reference: started.reference,
    });
    const { pollIntervalMs } = started;
    run.log.info({ taskRefId: stored.taskRefId, pollIntervalMs }, 'the MCP server runs the call as a task; the workflow polls it');
    const timeoutMs = route.task?.timeoutMs ?? integration.taskTimeoutMs;
    return {
      status: 'ok', content: '',
      task: { taskRefId: stored.taskRefId, timeoutMs, ...(pollIntervalMs ? { pollIntervalMs } : {}) },
    };
  } catch (err) {
    if (run.signal.aborted) throw run.signal.reason ?? err;
    if (asksFirst(err)) {
      run.log.info('the MCP server asks for input before it starts a task; the call is made the usual way');
      return 'asks first';
    }
    return resultOfFailure(err, requestTimeout(integration));
  }
}

export interface TaskPollInput extends ToolActivityInput {
  taskRefId: string;
}

/**
 * What a poll found: the call's outcome once the task has ended (its result stored), its questions
 * to wait for, or when to ask again.
 */
export interface TaskPoll {
  outcome?: ToolOutcome;
  waiting?: InputWait;
  /** a 2025-era task asks: its questions come only while tasks/result is open (task-live-questions.ts) */
  asksLive?: boolean;
  /** its questions were answered and it went on: poll again soon */
  answered?: boolean;
  pollIntervalMs?: number;
}

export interface TaskCancelInput extends TaskPollInput {
  /**
   * timeout: the task ran past the integration's taskTimeout; abandon: its questions were not
   * answered (the LLM is told `text`); cancel: the run was cancelled
   */
  reason: 'timeout' | 'abandon' | 'cancel';
  timeoutMs: number;
  text?: string;
}

export async function storeTaskResult(
  deps: ActivityDeps, input: ToolActivityInput, task: StoredToolTask, result: ToolResult,
): Promise<ToolOutcome> {
  const durationMs = Date.now() - Date.parse(task.createdAt);
  return storeToolResult(deps.db, input, {
    status: result.status, content: result.content, integrationId: task.integrationId, durationMs,
  });
}

/** The task and its integration; a result stored already (a poll whose worker died after storing) is the outcome. */
export async function loadTask(
  deps: ActivityDeps, input: TaskPollInput,
): Promise<{ outcome: ToolOutcome } | { task: StoredToolTask; integration?: Integration }> {
  const { stored } = await findToolCallAndRequest(deps.db, input.runId, input.turn, input.index + 1);
  if (stored) return { outcome: { status: stored.status, resultBytes: stored.resultBytes } };
  const task = await findToolTask(deps.db, input.runId, input.taskRefId);
  if (!task) throw new Error(`task ${input.taskRefId} of run ${input.runId} is not stored`);
  const integration = await findIntegration(deps.db, task.integrationId);
  return { task, ...(integration?.enabled ? { integration } : {}) };
}
