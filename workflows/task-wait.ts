import { CancellationScope, isCancellation, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { ToolActivityInput } from '../activities/tool-handler';
import { toolTaskQueue, type InputWait, type ParkedTask, type ToolOutcome, type ToolTask } from '../core/tool-call';
import type { InputAnswers, InputWaits } from './input-wait';

type Activities = ReturnType<typeof createActivities>;


export interface TaskWaitOptions {
  /** asked between polls: true when the run should continue-as-new now, carrying this wait */
  park?: () => boolean;
  /** a wait carried over from the previous execution */
  resume?: ParkedTask;
  /** told while the activity that relays a 2025-era task's questions runs: it may wait for a person */
  asking?: Pick<InputWaits, 'activityStarted' | 'activityEnded'>;
}

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 60_000;

/** The activities a task's wait runs: short polls and answers (`acts`), and the relay of a 2025-era task's questions (`live`). */
function taskActivities(input: ToolActivityInput, task: ToolTask) {
  const route = input.route;
  const toolTimeoutMs = route?.toolTimeoutMs ?? 60_000;
  const taskQueue = route?.taskQueue ?? toolTaskQueue(workflowInfo().taskQueue);
  const acts = proxyActivities<Activities>({
    // Each poll is one request to the server, bounded like a tool call's.
    startToCloseTimeout: toolTimeoutMs + 30_000,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
    taskQueue,
    summary: `poll the task of ${input.name}`,
  });
  // A 2025-era task's questions are relayed while tasks/result is held (task-live-questions.ts): as
  // long as a person may take to answer, with heartbeats, so that a lost worker is noticed.
  const live = proxyActivities<Activities>({
    startToCloseTimeout: Math.min(route?.elicitationTimeoutMs ?? 600_000, task.timeoutMs) + 2 * toolTimeoutMs + 60_000,
    heartbeatTimeout: '60s',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3 },
    taskQueue,
    summary: `relay the questions of the task of ${input.name}`,
  });
  return { acts, live };
}

/**
 * A tool call its server runs as a task (activities/tools/mcp-task.ts): polled from here with short
 * activities, at the server's suggested interval but never more often than a backoff from 1 s
 * doubling to 60 s, with timers in between: no activity runs and no worker slot is held while the
 * task works. A 2026-era task's questions are a round of the run, settled as a call's are (`settle`:
 * answers, reviewer decisions, sampling steps), then sent to the task; a 2025-era task's, which
 * come only while tasks/result is held, are relayed by an activity that holds it. Past the integration's
 * taskTimeout the task is cancelled and the LLM is told; a cancelled run cancels it too. When the
 * run should continue-as-new (`park`), the wait is returned as it stands, and the next execution
 * goes on with it (`resume`). The task's bound (24 h at most) keeps its polls a small part of
 * the run's history.
 */
export async function awaitToolTask(
  input: ToolActivityInput, task: ToolTask, settle: (wait: InputWait) => Promise<InputAnswers>,
  { park, resume, asking }: TaskWaitOptions = {},
): Promise<ToolOutcome | { parked: ParkedTask }> {
  const { acts, live } = taskActivities(input, task);
  const ref = { ...input, taskRefId: task.taskRefId };
  const deadline = resume?.deadline ?? Date.now() + task.timeoutMs;
  let backoff = resume?.backoff ?? FIRST_DELAY_MS;
  let suggested = resume?.suggested ?? task.pollIntervalMs ?? 0;
  // Each execution polls at least once before it may set the wait aside again.
  let polled = false;
  try {
    for (;;) {
      if (polled && park?.()) return { parked: { task, deadline, backoff, suggested } };
      const left = deadline - Date.now();
      if (left <= 0) {
        const ended = await acts.cancelMcpTask({ ...ref, reason: 'timeout', timeoutMs: task.timeoutMs });
        return ended.outcome ?? { status: 'error', resultBytes: 0 };
      }
      await sleep(Math.min(Math.max(backoff, suggested), MAX_DELAY_MS, left));
      const poll = await acts.pollMcpTask(ref);
      polled = true;
      if (poll.outcome) return poll.outcome;
      if (poll.asksLive) {
        asking?.activityStarted(input.toolCallId);
        const relayed = await live.relayMcpTaskQuestions({ ...ref, deadline }).finally(() => asking?.activityEnded(input.toolCallId));
        if (relayed.outcome) return relayed.outcome;
        if (relayed.answered) backoff = FIRST_DELAY_MS;
        continue;
      }
      if (poll.waiting) {
        // The task's questions wait as a call's do (its round stored, no activity running), then go to the task.
        const answers = await settle(poll.waiting);
        const answered = answers.answered
          ? await acts.answerMcpTask({ ...ref, roundId: poll.waiting.roundId })
          : await acts.cancelMcpTask({ ...ref, reason: 'abandon', text: answers.content, timeoutMs: task.timeoutMs });
        if (answered.outcome) return answered.outcome;
        backoff = FIRST_DELAY_MS;
        continue;
      }
      suggested = poll.pollIntervalMs ?? 0;
      backoff = Math.min(backoff * 2, MAX_DELAY_MS);
    }
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => acts.cancelMcpTask({ ...ref, reason: 'cancel', timeoutMs: task.timeoutMs }));
    }
    throw err;
  }
}
