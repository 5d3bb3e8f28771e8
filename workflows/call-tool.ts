import { ActivityFailure, isCancellation, proxyActivities, sleep, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import type { ToolActivityInput } from '../activities/tool-handler';
import {
  toolTaskQueue, type BusyIntegration, type InputWait, type McpToolRoute, type ParkedTask, type ToolAvailability, type ToolCallRef,
  type ToolOutcome, type ToolTask,
} from '../core/tool-call';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../core/integration';
import { toolResultText } from '../core/tool-texts';
import type { ReplayedCall } from '../core/replay';
import type { BudgetAsk } from './budget-ask';
import type { ApprovalGate, ApprovalSeqs } from './approval-gate';
import type { InputAnswers, InputWaits } from './input-wait';
import type { CallerToolWaits } from './caller-tool-wait';
import { answerSamplings, countSampledDuringCall, type ModelLedger } from './sampling-steps';
import { awaitToolTask } from './task-wait';
import { routeToolCall, type RoutedCall } from './tool-kinds';
import { runChild, type Family } from './sub-agent';
import { describeFailure } from './failures';
import { recording } from './recording';
import { tenantAttribute } from './tenant';


/** The tool activities, by the names the tool kinds give them (workflows/tool-kinds.ts). */
type ToolActivities = Record<string, (input: ToolActivityInput) => Promise<ToolOutcome>>;

/** What a tool call may wait for, with no activity running: a person's approval, answers to its server's questions, its caller. */
export interface Waits {
  gate: ApprovalGate;
  inputs: InputWaits;
  /** the run's model steps and usage, which its server's sampling requests add to */
  ledger: ModelLedger;
  /** the run's place among its sub-agents' runs */
  family: Family;
  /** a reached limit that asks a person (limits.onLimit "ask") */
  budget: BudgetAsk;
  /** calls of the tools the run's caller runs, waiting for its answers */
  callers: CallerToolWaits;
}

/** How a call's task wait takes part in its turn's continue-as-new (run-workflow.ts endTurn). */
export interface TaskWaits {
  turn: { running: number; onTasks: number };
  park: () => boolean;
  /** the wait the previous execution set aside */
  resume?: ParkedTask;
}


/**
 * What the run gives a call: its waits, its line for the Web UI, its approval events' numbers, its
 * part in the turn, and a replay's recorded answer.
 */
interface CallOptions {
  waits: Waits;
  summary?: string;
  approvalSeqs: ApprovalSeqs;
  tasks: TaskWaits;
  /** a replay's call its original's recording answers (workflows/turn-calls.ts): it asks no one and runs nothing */
  replayed?: ReplayedCall & { originalRunId: string };
}

type CallEnd = ToolOutcome | { parked: ParkedTask };

/**
 * One tool call, dispatched by its kind. A tool that fails, or whose activity gave up, answers the
 * LLM with text. A tool whose integration asks for approval waits for it first; denied or timed
 * out, the LLM reads why. A call whose 2026-era server asks questions waits for the answers, then
 * runs again with them (a new activity per round). Not an async function: every promise made in
 * workflow code costs the SDK a stack trace (its stack-trace query), so the usual call is its
 * activity's promise and one handler, nothing more.
 */
export function callTool(ref: Omit<ToolCallRef, 'type'>, tools: ToolAvailability, options: CallOptions): Promise<CallEnd> {
  const { type, kind, route, subAgent } = routeToolCall(ref.name, tools);
  const { waits, approvalSeqs, tasks } = options;
  const family = waits.family;
  const input: ToolActivityInput = {
    ...ref, type, tenantId: String(tenantAttribute().value), ...(route ? { route } : {}),
    ...(subAgent ? { subAgent: { ...subAgent, rootRunId: family.rootRunId, maxDescendants: family.maxDescendants() } } : {}),
  };
  if (options.replayed) {
    const { originalRunId, ...replayed } = options.replayed;
    return recording.answerFromRecording({ ...input, originalRunId, replayed });
  }
  if (!kind.activity || !kind.options) {
    return recording.recordToolResult({ ...input, status: 'error', content: kind.failureText('', ref.name) });
  }
  const call = new DispatchedCall(input, { ...kind, activity: kind.activity, options: kind.options }, options);
  if (tasks.resume) return call.waitOnTask(tasks.resume.task, tasks.resume);
  if (!route?.approval) return call.run();
  return waits.gate.awaitDecision({ ...ref, type }, route.integrationId, route.approval, approvalSeqs).then(
    (gate) => (gate.approved ? call.run() : recording.recordToolResult({ ...input, status: 'error', content: gate.content })),
  ).catch(call.failed);
}

/**
 * A call whose kind has an activity, from its first dispatch to its end: its rounds of questions,
 * its waits for a turn among the integration's calls, its task, its sub-agent's run. Methods chain
 * promises, never wrap them (see callTool).
 */
class DispatchedCall {
  private readonly route?: McpToolRoute;

  constructor(
    private readonly input: ToolActivityInput,
    private readonly kind: RoutedCall['kind'] & Required<Pick<RoutedCall['kind'], 'activity' | 'options'>>,
    private readonly options: CallOptions,
  ) {
    this.route = input.route;
  }

  /** The activity gave up or the call failed otherwise: the LLM reads the kind's text. */
  readonly failed = (err: unknown): Promise<ToolOutcome> => {
    if (isCancellation(err)) throw err;
    const content = this.kind.failureText(describeFailure(err).message, this.input.name);
    return recording.recordToolResult({ ...this.input, status: 'error', content });
  };

  /** One dispatch of the call's activity: the first, a round with answers, or a try after waiting its turn. */
  run(resume?: InputWait, turnWait?: TurnWait): Promise<CallEnd> {
    const { input, options: { waits } } = this;
    const opts = this.kind.options({ ...input, summary: this.options.summary }, this.route);
    opts.taskQueue ??= toolTaskQueue(workflowInfo().taskQueue);
    // Each round's call is an activity of its own, and so is each try of a call that waits its turn.
    if (resume && opts.activityId) opts.activityId = `${opts.activityId}:${resume.round}`;
    if (turnWait && opts.activityId) opts.activityId = `${opts.activityId}:w${turnWait.tries}`;
    waits.inputs.activityStarted(input.toolCallId);
    const dispatched = { ...input, step: waits.ledger.steps, ...(resume ? { resume: { roundId: resume.roundId } } : {}) };
    return proxyActivities<ToolActivities>(opts)[this.kind.activity](dispatched).then(
      (outcome) => this.ended(outcome, resume, turnWait),
      (err: unknown) => {
        waits.inputs.activityEnded(input.toolCallId);
        return input.type === 'mcp_tool' && workerLost(err) ? this.recovered(err, resume ? resume.round + 1 : 1) : this.failed(err);
      },
    );
  }

  /** What the activity's end asks for next: nothing (its outcome), another try, a task, a sub-agent, its caller, answers. */
  private ended(outcome: ToolOutcome, resume: InputWait | undefined, turnWait: TurnWait | undefined): Promise<CallEnd> | CallEnd {
    const { waits } = this.options;
    waits.inputs.activityEnded(this.input.toolCallId);
    if (outcome.busy) return this.waitForTurn(outcome.busy, resume, turnWait);
    countSampledDuringCall(waits.ledger, outcome.sampled);
    if (outcome.task) return this.waitOnTask(outcome.task);
    if (outcome.child) return runChild(this.input, outcome.child, waits.family).catch(this.failed);
    if (outcome.caller) return waits.callers.awaitAnswer(this.input, outcome.caller).catch(this.failed);
    return outcome.waiting ? this.answered(outcome.waiting) : outcome;
  }

  /**
   * The worker runs as many calls of the integration as it may: the call is dispatched again after
   * a pause (any worker may take it), until it has waited as long as one request may take.
   */
  private waitForTurn(busy: BusyIntegration, resume: InputWait | undefined, before?: TurnWait): Promise<CallEnd> {
    const since = before?.since ?? Date.now();
    const waitedMs = Date.now() - since;
    const boundMs = this.route?.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    if (waitedMs >= boundMs) {
      const message = toolResultText.waitedForTurn(waitedMs, busy);
      const content = this.kind.notRunText?.(message) ?? this.kind.failureText(message, this.input.name);
      return recording.recordToolResult({ ...this.input, status: 'error', content });
    }
    const tries = (before?.tries ?? 0) + 1;
    return sleep(Math.min(turnPause(tries), boundMs - waitedMs)).then(() => this.run(resume, { since, tries }));
  }

  /**
   * Its worker died after the activity stored its server's questions (or the task it runs the
   * call as), before Temporal heard it end: what it stored is what it would have returned.
   */
  private recovered(err: unknown, round: number): Promise<CallEnd> {
    const { runId, toolCallId, turn, index } = this.input;
    const task = this.route?.task;
    return recording.findCallWait({ runId, toolCallId, turn, index, round, ...(task ? { taskTimeoutMs: task.timeoutMs } : {}) }).then(
      ({ wait, task: started }) => (wait ? this.answered(wait) : started ? this.waitOnTask(started) : this.failed(err)),
      this.failed,
    );
  }

  /** The round's questions first (a reviewer's decisions on its sampling requests among them), then its sampling steps. */
  private settled(wait: InputWait): Promise<InputAnswers> {
    const { waits } = this.options;
    const questions = wait.inputIds.length > 0
      ? waits.inputs.awaitAnswers(this.input.name, wait)
      : Promise.resolve<InputAnswers>({ answered: true });
    return questions.then((answers) => (
      answers.answered && wait.samplings?.length ? answerSamplings(waits.ledger, this.input, wait) : answers));
  }

  /**
   * While it waits on its task, the call counts as one that would let the run continue-as-new.
   * (Not while its questions wait for a person: the turn then goes on in this execution.)
   */
  private readonly settledOnTask = (wait: InputWait): Promise<InputAnswers> => {
    const { turn } = this.options.tasks;
    turn.onTasks--;
    const back = () => { turn.onTasks++; };
    return this.settled(wait).then((answers) => {
      back();
      return answers;
    }, (err: unknown) => {
      back();
      throw err;
    });
  };

  waitOnTask(task: ToolTask, resume?: ParkedTask): Promise<CallEnd> {
    const { tasks, waits } = this.options;
    tasks.turn.onTasks++;
    return awaitToolTask(this.input, task, this.settledOnTask, { park: tasks.park, resume, asking: waits.inputs }).then((end) => {
      tasks.turn.onTasks--;
      return end;
    }, (err: unknown) => {
      tasks.turn.onTasks--;
      return this.failed(err);
    });
  }

  /** The call's server asked: once answered, the call runs again with the answers; else the LLM reads why not. */
  private answered(wait: InputWait): Promise<CallEnd> {
    return this.settled(wait).then(
      (answers) => (answers.answered
        ? this.run(wait)
        : recording.recordToolResult({ ...this.input, status: 'error', content: answers.content })),
    ).catch(this.failed);
  }
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
