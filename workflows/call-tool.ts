import { ActivityFailure, isCancellation, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { ToolActivityInput } from '../activities/tool-call';
import type { InputWait, ParkedTask, ToolAvailability, ToolCallRef, ToolOutcome, ToolTask } from '../core/tool-call';
import type { ApprovalGate, ApprovalSeqs } from './approval-gate';
import type { InputVerdict, InputWaits } from './input-wait';
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
  const run = (resume?: InputWait): Promise<ToolOutcome | { parked: ParkedTask }> => {
    const opts = options({ ...ref, summary }, route);
    // Each round's call is an activity of its own.
    if (resume && opts.activityId) opts.activityId = `${opts.activityId}:${resume.round}`;
    waits.inputs.activityStarted(ref.toolCallId);
    return proxyActivities<ToolActivities>(opts)[activity]({ ...input, step: waits.ledger.steps, ...(resume ? { resume: { roundId: resume.roundId } } : {}) }).then(
      (outcome) => {
        waits.inputs.activityEnded(ref.toolCallId);
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
  // Its worker died after the activity stored its server's questions (or the task it runs the
  // call as), before Temporal heard it end: what it stored is what it would have returned.
  const recovered = (err: unknown, round: number) => recording.findCallWait({
    runId: ref.runId, toolCallId: ref.toolCallId, turn: ref.turn, index: ref.index, round, ...(route?.task ? { taskTimeoutMs: route.task.timeoutMs } : {}),
  }).then(({ wait, task }) => (wait ? answered(wait) : task ? waitOnTask(task) : failed(err)), failed);
  // The round's questions first (a reviewer's decisions on its sampling requests among them), then its sampling steps.
  const settled = (wait: InputWait): Promise<InputVerdict> => (wait.inputIds.length > 0 ? waits.inputs.awaitAnswers(ref.name, wait) : Promise.resolve<InputVerdict>({ answered: true }))
    .then((verdict) => (verdict.answered && wait.samplings?.length ? answerSamplings(waits.ledger, ref, wait) : verdict));
  // While it waits on its task, the call counts as one that would let the run continue-as-new.
  // (Not while its questions wait for a person: the turn then goes on in this execution.)
  const settledOnTask = (wait: InputWait) => {
    tasks.turn.onTasks--;
    const back = () => { tasks.turn.onTasks++; };
    return settled(wait).then((verdict) => {
      back();
      return verdict;
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
    (verdict) => (verdict.answered ? run(wait) : recording.recordToolResult({ ...input, status: 'error', content: verdict.content })),
  ).catch(failed);
  if (tasks.resume) return waitOnTask(tasks.resume.task, tasks.resume);
  if (!route?.approval) return run();
  return waits.gate.awaitDecision({ ...ref, type }, route.integrationId, route.approval, approvalSeqs).then(
    (verdict) => (verdict.approved ? run() : recording.recordToolResult({ ...input, status: 'error', content: verdict.content })),
  ).catch(failed);
}

/** The activity timed out: its worker died or hung, whatever the call had got to. */
const workerLost = (err: unknown) => err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
