import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import type { Client } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import type { ElicitHandler } from '../../mcp-client/connections/connect';
import type { Logger } from '../../platform/logger';
import type { StoredToolTask } from '../../store/runs/tool-tasks';
import { decodeReference } from '../../mcp-client/tool-calls/task-reference';
import { pollToolTask } from '../../mcp-client/tool-calls/tasks';
import type { ActivityDeps } from '../deps';
import { personWaits } from '../person-waits';
import type { ToolRun } from '../tool-handler';
import { callClock, elicitationHandler, type CallClock } from './elicitation';
import { loadTask, storeTaskResult, type TaskPoll, type TaskPollInput } from './mcp-task';
import { unexpected } from './mcp-results';

/**
 * A 2025-era task that asks (`input_required`): the 2025-11-25 protocol sends its questions only
 * as server-to-client requests while the client holds `tasks/result` open, on a connection that
 * lives. So this activity holds it open, on a connection of its own whose elicitation handler
 * stores each question as a pending input of the run and waits for its answer (the 2025-era wait
 * inside an activity, elicitation.ts), and lets go once the task has moved on: its status, read
 * meanwhile, says it works again or has ended. The workflow's next poll reads the result. A server
 * that sends no question within a grace period (it cannot over a stateless connection) is left to
 * the polls, which come back here later.
 */

/** how often the task's status is read while tasks/result is held */
const STATUS_EVERY_MS = 2_000;
/** how long a held tasks/result waits for a first question */
const QUESTION_GRACE_MS = 30_000;

export interface TaskLiveQuestionsInput extends TaskPollInput {
  /** the task's deadline (its integration's taskTimeout from its start), epoch ms */
  deadline: number;
}

export function createTaskLiveQuestionActivities(deps: ActivityDeps) {
  return {
    async relayMcpTaskQuestions(input: TaskLiveQuestionsInput): Promise<TaskPoll> {
      const loaded = await loadTask(deps, input);
      if ('outcome' in loaded) return loaded;
      const { task, integration } = loaded;
      if (!integration) {
        return { outcome: await storeTaskResult(deps, input, task, unexpected('the integration no longer exists or is disabled')) };
      }
      return new HeldTaskResult(deps, input, task, integration).relay();
    },
  };
}

/** One hold of a task's tasks/result: the questions it relays, and whether the task moved on after them. */
class HeldTaskResult {
  private readonly context = Context.current();
  private readonly untilDeadline: number;
  private readonly held = new AbortController();
  private readonly signal: AbortSignal;
  private readonly log: Logger;
  private readonly clock: CallClock;
  private readonly relayQuestion: ElicitHandler;
  private readonly started = Date.now();
  private asked = false;
  private movedOn = false;

  constructor(
    private readonly deps: ActivityDeps, input: TaskLiveQuestionsInput,
    private readonly task: StoredToolTask, private readonly integration: Integration,
  ) {
    const { context } = this;
    this.untilDeadline = Math.max(0, input.deadline - Date.now());
    const budgetMs = Math.min(integration.elicitationTimeoutMs, this.untilDeadline);
    this.signal = AbortSignal.any([context.cancellationSignal, this.held.signal]);
    this.log = deps.logger.child({ runId: input.runId, toolCallId: input.toolCallId, taskRefId: task.taskRefId });
    const run: ToolRun = {
      input, deps, log: this.log, signal: this.signal, heartbeat: () => context.heartbeat(),
      waitingForPerson: personWaits(context, input.toolCallId, this.log),
    };
    // Only the questions' waits count against the budget: the clock runs out only at the task's deadline.
    this.clock = callClock(this.untilDeadline + 1, this.untilDeadline + 1, budgetMs, () => this.held.abort());
    this.relayQuestion = elicitationHandler(run, this.clock, this.signal);
  }

  private readonly elicit: ElicitHandler = (params, requestSignal) => {
    this.asked = true;
    return this.relayQuestion(params, requestSignal);
  };

  /** Holds tasks/result while the task asks; a failure leaves the task to the polls. */
  async relay(): Promise<TaskPoll> {
    const { taskId } = decodeReference(this.task.reference, this.integration.id);
    try {
      await this.deps.mcpPool.withCallClient(this.integration, { elicit: this.elicit }, (client) => this.watch(client, taskId));
    } catch (err) {
      if (this.context.cancellationSignal.aborted) throw err;
      this.log.warn({ err: (err as Error).message }, 'holding tasks/result for the task\'s questions failed; polling goes on');
    } finally {
      this.held.abort();
      this.clock.stop();
    }
    return this.movedOn ? { answered: true } : {};
  }

  /** Until tasks/result answers, the task's status moves on, or no question came within the grace period. */
  private async watch(client: Client, taskId: string): Promise<void> {
    const { signal, integration } = this;
    const result = client.request({ method: 'tasks/result', params: { taskId } }, z.looseObject({}), {
      signal, timeout: this.untilDeadline + 1,
    }).then(() => 'ended' as const, () => 'ended' as const);
    const requestTimeoutMs = Math.min(integration.toolTimeoutMs, 60_000);
    for (;;) {
      const woke = await Promise.race([result, sleep(STATUS_EVERY_MS, 'look' as const, { signal }).catch(() => 'ended' as const)]);
      this.context.heartbeat();
      if (signal.aborted) return;
      // tasks/result answered: the task has ended (the next poll reads how).
      if (woke === 'ended') {
        this.movedOn = this.asked;
        return;
      }
      const status = await pollToolTask(client, this.task.reference, {
        endpointId: integration.id, maxResultBytes: integration.maxResultBytes, requestTimeoutMs, signal,
      });
      if (status.status !== 'input_required') {
        this.movedOn = this.asked;
        return;
      }
      if (!this.asked && Date.now() - this.started > QUESTION_GRACE_MS) {
        this.log.info('the MCP task asks, but sent no question over tasks/result; polling goes on');
        return;
      }
    }
  }
}
