import { Context } from '@temporalio/activity';
import type { McpToolRoute, ToolOutcome } from '../../core/tool-call';
import { formatDuration } from '../../core/duration';
import type { Integration } from '../../core/integration';
import { mcpErrorText } from '../../core/mcp-error-text';
import { toolResultText } from '../../core/tool-texts';
import { cancelToolTask, pollToolTask, startToolTask, TaskReferenceError } from '../../mcp-client/tasks';
import { findIntegration } from '../../store/integrations/integrations';
import { findToolCallAndRequest } from '../../store/runs/tool-calls';
import { findToolTask, insertToolTask, recordToolTaskPoll, type StoredToolTask } from '../../store/runs/tool-tasks';
import type { ActivityDeps } from '../deps';
import { storeToolResult, type ToolActivityInput, type ToolRun, type Verdict } from '../tool-call';
import { failureVerdict, resultVerdict, unexpected } from './mcp-verdicts';

/**
 * Long tool calls as tasks (MCP tasks). The call's activity asks the server for a task, stores its
 * reference in PostgreSQL and ends; the workflow polls it with short activities (workflows/task-wait.ts)
 * from any worker, with no activity running in between, and the poll that finds it finished stores
 * its result as any call's. A call is never sent twice: a start whose worker died is not retried
 * (unless the tool is safe to repeat), and polls only read.
 */

/** Each request to the server, a poll included, is bounded like a tool call's request (60 s by default). */
const requestTimeout = (integration: Integration) => Math.min(integration.toolTimeoutMs, 60_000);

export async function startTaskCall(integration: Integration, route: McpToolRoute, args: Record<string, unknown>, run: ToolRun): Promise<Verdict> {
  const { input } = run;
  try {
    const started = await run.deps.mcpPool.withClient(integration, (client) => startToolTask(client, { name: route.toolName, arguments: args }, {
      endpointId: integration.id, maxResultBytes: integration.maxResultBytes, requestTimeoutMs: requestTimeout(integration), signal: run.signal,
    }));
    // The server chose to answer at once.
    if ('result' in started) return resultVerdict(started.result, integration);
    const stored = await insertToolTask(run.deps.db, {
      runId: input.runId, toolCallId: input.toolCallId, turn: input.turn, slot: input.index + 1, integrationId: integration.id, reference: started.reference,
    });
    run.log.info({ taskRefId: stored.taskRefId, pollIntervalMs: started.pollIntervalMs }, 'the MCP server runs the call as a task; the workflow polls it');
    return {
      status: 'ok', content: '',
      task: { taskRefId: stored.taskRefId, timeoutMs: route.task?.timeoutMs ?? integration.taskTimeoutMs, ...(started.pollIntervalMs ? { pollIntervalMs: started.pollIntervalMs } : {}) },
    };
  } catch (err) {
    if (run.signal.aborted) throw run.signal.reason ?? err;
    return failureVerdict(err, requestTimeout(integration));
  }
}

export interface TaskPollInput extends ToolActivityInput {
  taskRefId: string;
}

/** What a poll found: the call's outcome once the task has ended (its result stored), else when to ask again. */
export interface TaskPoll {
  outcome?: ToolOutcome;
  pollIntervalMs?: number;
}

export interface TaskCancelInput extends TaskPollInput {
  /** timeout: the task ran past the integration's taskTimeout (the LLM is told); cancel: the run was cancelled */
  reason: 'timeout' | 'cancel';
  timeoutMs: number;
}

async function storeVerdict(deps: ActivityDeps, input: ToolActivityInput, task: StoredToolTask, verdict: Verdict): Promise<ToolOutcome> {
  const durationMs = Date.now() - Date.parse(task.createdAt);
  return storeToolResult(deps.db, input, { status: verdict.status, content: verdict.content, integrationId: task.integrationId, durationMs });
}

export function createMcpTaskActivities(deps: ActivityDeps) {
  /** The task and its integration; a result stored already (a poll whose worker died after storing) is the outcome. */
  async function load(input: TaskPollInput): Promise<{ outcome: ToolOutcome } | { task: StoredToolTask; integration?: Integration }> {
    const { stored } = await findToolCallAndRequest(deps.db, input.runId, input.turn, input.index + 1);
    if (stored) return { outcome: { status: stored.status, resultBytes: stored.resultBytes } };
    const task = await findToolTask(deps.db, input.runId, input.taskRefId);
    if (!task) throw new Error(`task ${input.taskRefId} of run ${input.runId} is not stored`);
    const integration = await findIntegration(deps.db, task.integrationId);
    return { task, ...(integration?.enabled ? { integration } : {}) };
  }

  return {
    async pollMcpTask(input: TaskPollInput): Promise<TaskPoll> {
      const loaded = await load(input);
      if ('outcome' in loaded) return loaded;
      const { task, integration } = loaded;
      if (!integration) return { outcome: await storeVerdict(deps, input, task, unexpected('the integration no longer exists or is disabled')) };
      const signal = Context.current().cancellationSignal;
      let verdict: Verdict;
      try {
        const polled = await deps.mcpPool.withClient(integration, (client) => pollToolTask(client, task.reference, {
          endpointId: integration.id, maxResultBytes: integration.maxResultBytes, requestTimeoutMs: requestTimeout(integration), signal,
        }));
        await recordToolTaskPoll(deps.db, task.taskRefId, polled.status);
        if (polled.status === 'working' || polled.status === 'input_required') return polled.pollIntervalMs ? { pollIntervalMs: polled.pollIntervalMs } : {};
        verdict = polled.status === 'completed' ? resultVerdict(polled.result, integration)
          : polled.status === 'failed' ? { status: 'error', content: toolResultText.mcpToolFailed(polled.message) }
            : { status: 'error', content: toolResultText.mcpToolFailed('the MCP server cancelled the task') };
      } catch (err) {
        // A reference the server no longer knows, or one this engine cannot use: polling again cannot help.
        if (!(err instanceof TaskReferenceError)) throw err;
        verdict = unexpected(mcpErrorText(err));
      }
      deps.logger.info({ runId: input.runId, toolCallId: input.toolCallId, taskRefId: task.taskRefId, polls: task.polls + 1, status: verdict.status }, 'MCP task ended');
      return { outcome: await storeVerdict(deps, input, task, verdict) };
    },

    /** Asks the server to cancel the task; for a task past its timeout, the LLM is told. Best effort toward the server. */
    async cancelMcpTask(input: TaskCancelInput): Promise<TaskPoll> {
      const loaded = await load(input);
      if ('outcome' in loaded) return loaded;
      const { task, integration } = loaded;
      if (integration) {
        await deps.mcpPool.withClient(integration, (client) => cancelToolTask(client, task.reference, {
          endpointId: integration.id, requestTimeoutMs: requestTimeout(integration),
        })).catch((err: Error) => deps.logger.warn({ runId: input.runId, taskRefId: task.taskRefId, err: err.message }, 'cancelling an MCP task failed'));
      }
      await recordToolTaskPoll(deps.db, task.taskRefId, input.reason === 'timeout' ? 'timed_out' : 'cancelled');
      if (input.reason === 'cancel') return {};
      const text = toolResultText.mcpToolFailed(`the task did not finish within ${formatDuration(input.timeoutMs)}`);
      return { outcome: await storeVerdict(deps, input, task, { status: 'error', content: text }) };
    },
  };
}
