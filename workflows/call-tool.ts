import { ActivityFailure, isCancellation, proxyActivities, sleep, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import type { ToolActivityInput } from '../activities/tool-handler';
import { toolTaskQueue, type BusyIntegration, type InputWait, type ParkedTask, type ToolAvailability, type ToolCallRef, type ToolOutcome, type ToolTask } from '../core/tool-call';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../core/integration';
import { toolResultText } from '../core/tool-texts';
import type { ApprovalGate, ApprovalSeqs } from './approval-gate';
import type { InputAnswers, InputWaits } from './input-wait';
import { answerSamplings, countSampledDuringCall, type ModelLedger } from './sampling-steps';
import { awaitToolTask } from './task-wait';
import { routeToolCall } from './tool-kinds';
import { runChild, type Family } from './sub-agent';
import { describeFailure } from './failures';
import { recording } from './recording';


/** The tool activities, by the names the tool kinds give them (workflows/tool-kinds.ts). */
type ToolActivities = Record<string, (input: ToolActivityInput) => Promise<ToolOutcome>>;

/** What a tool call may wait for, with no activity running: a person's approval, answers to its server's questions. */
export interface Waits {
  gate: ApprovalGate;
  inputs: InputWaits;
  /** the run's model steps and usage, which its server's sampling requests add to */
  ledger: ModelLedger;
  /** the run's place among its sub-agents' runs */
  family: Family;
}

/** How a call's task wait takes part in its turn's continue-as-new (run-workflow.ts endTurn). */
export interface TaskWaits {
  turn: { running: number; onTasks: number };
  park: () => boolean;
  /** the wait the previous execution set aside */
  resume?: ParkedTask;
}


/**
 * One tool call, dispatched by its kind. A tool that fails, or whose activity gave up, answers the LLM with text.
 * A tool whose integration asks for approval waits for it first; denied or timed out, the LLM reads why.
 * A call whose 2026-era server asks questions waits for the answers, then runs again with them (a
 * new activity per round). Not an async function: every promise made in workflow code costs the
 * SDK a stack trace (its stack-trace query), so the usual call is its activity's promise and one
 * handler, nothing more.
 */
export function callTool(
  ref: Omit<ToolCallRef, 'type'>, tools: ToolAvailability,
  { waits, summary, approvalSeqs, tasks }: { waits: Waits; summary?: string; approvalSeqs: ApprovalSeqs; tasks: TaskWaits },
): Promise<ToolOutcome | { parked: ParkedTask }> {
  const { type, kind, route, subAgent } = routeToolCall(ref.name, tools);
  const input = { ...ref, type, ...(route ? { route } : {}), ...(subAgent ? { subAgent: { ...subAgent, rootRunId: waits.family.rootRunId, maxDescendants: waits.family.maxDescendants() } } : {}) };
  const { activity, options } = kind;
  if (!activity || !options) {
    return recording.recordToolResult({ ...input, status: 'error', content: kind.failureText('', ref.name) });
  }
  const failed = (err: unknown) => {
    if (isCancellation(err)) throw err;
    return recording.recordToolResult({ ...input, status: 'error', content: kind.failureText(describeFailure(err).message, ref.name) });
  };
  const run = (resume?: InputWait, turnWait?: TurnWait): Promise<ToolOutcome | { parked: ParkedTask }> => {
    const opts = options({ ...ref, summary }, route);
    opts.taskQueue ??= toolTaskQueue(workflowInfo().taskQueue);
    // Each round's call is an activity of its own, and so is each try of a call that waits its turn.
    if (resume && opts.activityId) opts.activityId = `${opts.activityId}:${resume.round}`;
    if (turnWait && opts.activityId) opts.activityId = `${opts.activityId}:w${turnWait.tries}`;
    waits.inputs.activityStarted(ref.toolCallId);
    return proxyActivities<ToolActivities>(opts)[activity]({ ...input, step: waits.ledger.steps, ...(resume ? { resume: { roundId: resume.roundId } } : {}) }).then(
      (outcome) => {
        waits.inputs.activityEnded(ref.toolCallId);
        if (outcome.busy) return waitForTurn(outcome.busy, resume, turnWait);
        countSampledDuringCall(waits.ledger, outcome.sampled);
        if (outcome.task) return waitOnTask(outcome.task);
        if (outcome.child) return runChild(input, outcome.child, waits.family).catch(failed);
        return outcome.waiting ? answered(outcome.waiting) : outcome;
      }, (err: unknown) => {
        waits.inputs.activityEnded(ref.toolCallId);
        return type === 'mcp_tool' && workerLost(err) ? recovered(err, resume ? resume.round + 1 : 1) : failed(err);
      },
    );
  };
  // The worker runs as many calls of the integration as it may: the call is dispatched again after
  // a pause (any worker may take it), until it has waited as long as one request may take.
  const waitForTurn = (busy: BusyIntegration, resume: InputWait | undefined, before?: TurnWait) => {
    const since = before?.since ?? Date.now();
    const waitedMs = Date.now() - since;
    const boundMs = route?.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    if (waitedMs >= boundMs) {
      const message = toolResultText.waitedForTurn(waitedMs, busy.integrationName, busy.maxConcurrentCalls);
      return recording.recordToolResult({ ...input, status: 'error', content: kind.notRunText?.(message) ?? kind.failureText(message, ref.name) });
    }
    const tries = (before?.tries ?? 0) + 1;
    return sleep(Math.min(turnPause(tries), boundMs - waitedMs)).then(() => run(resume, { since, tries }));
  };
  // Its worker died after the activity stored its server's questions (or the task it runs the
  // call as), before Temporal heard it end: what it stored is what it would have returned.
  const recovered = (err: unknown, round: number) => recording.findCallWait({
    runId: ref.runId, toolCallId: ref.toolCallId, turn: ref.turn, index: ref.index, round, ...(route?.task ? { taskTimeoutMs: route.task.timeoutMs } : {}),
  }).then(({ wait, task }) => (wait ? answered(wait) : task ? waitOnTask(task) : failed(err)), failed);
  // The round's questions first (a reviewer's decisions on its sampling requests among them), then its sampling steps.
  const settled = (wait: InputWait): Promise<InputAnswers> => (wait.inputIds.length > 0 ? waits.inputs.awaitAnswers(ref.name, wait) : Promise.resolve<InputAnswers>({ answered: true }))
    .then((answers) => (answers.answered && wait.samplings?.length ? answerSamplings(waits.ledger, ref, wait) : answers));
  // While it waits on its task, the call counts as one that would let the run continue-as-new.
  // (Not while its questions wait for a person: the turn then goes on in this execution.)
  const settledOnTask = (wait: InputWait) => {
    tasks.turn.onTasks--;
    const back = () => { tasks.turn.onTasks++; };
    return settled(wait).then((answers) => {
      back();
      return answers;
    }, (err: unknown) => {
      back();
      throw err;
    });
  };
  const waitOnTask = (task: ToolTask, resume?: ParkedTask) => {
    tasks.turn.onTasks++;
    return awaitToolTask(input, task, settledOnTask, { park: tasks.park, resume, asking: waits.inputs }).then((end) => {
      tasks.turn.onTasks--;
      return end;
    }, (err: unknown) => {
      tasks.turn.onTasks--;
      return failed(err);
    });
  };
  const answered = (wait: InputWait) => settled(wait).then(
    (answers) => (answers.answered ? run(wait) : recording.recordToolResult({ ...input, status: 'error', content: answers.content })),
  ).catch(failed);
  if (tasks.resume) return waitOnTask(tasks.resume.task, tasks.resume);
  if (!route?.approval) return run();
  return waits.gate.awaitDecision({ ...ref, type }, route.integrationId, route.approval, approvalSeqs).then(
    (gate) => (gate.approved ? run() : recording.recordToolResult({ ...input, status: 'error', content: gate.content })),
  ).catch(failed);
}

/** A call waiting its turn (activities/tool-slots.ts): since when, in workflow time, and how many times it found no slot. */
interface TurnWait {
  since: number;
  tries: number;
}

/** 0.5 s, doubling to 8 s, each within ±25% (the workflow's seeded random): calls that waited together spread out. */
const turnPause = (tries: number) => Math.min(500 * 2 ** (tries - 1), 8_000) * (0.75 + Math.random() / 2);

/** The activity timed out: its worker died or hung, whatever the call had got to. */
const workerLost = (err: unknown) => err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
