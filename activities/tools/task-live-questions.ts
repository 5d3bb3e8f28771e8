import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import type { ElicitHandler } from '../../mcp-client/connect';
import { decodeReference } from '../../mcp-client/task-reference';
import { pollToolTask } from '../../mcp-client/tasks';
import type { ActivityDeps } from '../deps';
import { personWaits } from '../person-waits';
import type { ToolRun } from '../tool-handler';
import { callClock, elicitationHandler } from './elicitation';
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
      if (!integration) return { outcome: await storeTaskResult(deps, input, task, unexpected('the integration no longer exists or is disabled')) };
      const context = Context.current();
      const untilDeadline = Math.max(0, input.deadline - Date.now());
      const budgetMs = Math.min(integration.elicitationTimeoutMs, untilDeadline);
      const requestTimeoutMs = Math.min(integration.toolTimeoutMs, 60_000);
      const held = new AbortController();
      const signal = AbortSignal.any([context.cancellationSignal, held.signal]);
      const log = deps.logger.child({ runId: input.runId, toolCallId: input.toolCallId, taskRefId: task.taskRefId });
      const run: ToolRun = { input, deps, log, signal, heartbeat: () => context.heartbeat(), waitingForPerson: personWaits(context, input.toolCallId, log) };
      // Only the questions' waits count against the budget: the clock runs out only at the task's deadline.
      const clock = callClock(untilDeadline + 1, untilDeadline + 1, budgetMs, () => held.abort());
      let asked = false;
      let movedOn = false;
      const relay = elicitationHandler(run, clock, signal);
      const elicit: ElicitHandler = (params, requestSignal) => {
        asked = true;
        return relay(params, requestSignal);
      };
      const { taskId } = decodeReference(task.reference, integration.id);
      const started = Date.now();
      try {
        await deps.mcpPool.withCallClient(integration, { elicit }, async (client) => {
          const result = client.request({ method: 'tasks/result', params: { taskId } }, z.looseObject({}), { signal, timeout: untilDeadline + 1 })
            .then(() => 'ended' as const, () => 'ended' as const);
          for (;;) {
            const woke = await Promise.race([result, sleep(STATUS_EVERY_MS, 'look' as const, { signal }).catch(() => 'ended' as const)]);
            context.heartbeat();
            if (signal.aborted) return;
            // tasks/result answered: the task has ended (the next poll reads how).
            if (woke === 'ended') {
              movedOn = asked;
              return;
            }
            const status = await pollToolTask(client, task.reference, {
              endpointId: integration.id, maxResultBytes: integration.maxResultBytes, requestTimeoutMs, signal,
            });
            if (status.status !== 'input_required') {
              movedOn = asked;
              return;
            }
            if (!asked && Date.now() - started > QUESTION_GRACE_MS) {
              log.info('the MCP task asks, but sent no question over tasks/result; polling goes on');
              return;
            }
          }
        });
      } catch (err) {
        if (context.cancellationSignal.aborted) throw err;
        log.warn({ err: (err as Error).message }, 'holding tasks/result for the task\'s questions failed; polling goes on');
      } finally {
        held.abort();
        clock.stop();
      }
      return movedOn ? { answered: true } : {};
    },
  };
}
