import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PreparedRun } from '../activities/prepare-run';
import { CALLER_TOOL_ANSWERED_SIGNAL } from '../core/caller-tools';
import { DECIDE_APPROVAL_UPDATE, type DecideApprovalInput } from '../core/approval';
import { DECIDE_BUDGET_UPDATE, type BudgetDecisionResult, type DecideBudgetInput } from '../core/budget-ask';
import { INPUT_ANSWERED_SIGNAL, RUN_STATE_QUERY, TOOL_CALL_WAITING_SIGNAL, type RunState, type ToolCallWaiting } from '../core/run';
import type { ForkPoint } from '../core/fork';
import type { Usage } from '../core/messages';
import type { RecordedReplay, ReplayedCall } from '../core/replay';
import type { LimitName, RunLimits } from '../core/run-limits';
import type { ParkedTask, ToolCallRef, ToolOutcome } from '../core/tool-call';

/** The run workflow's input; the run itself is loaded by reference (runId is the workflow id). */
export interface RunWorkflowInput {
  runId: string;
  /** Continue-as-new at a turn boundary once history exceeds this many bytes. */
  continueAsNewAtHistoryBytes?: number;
  /** the run's own limits, given when it started: they tighten its agent's (core/run-limits.ts) */
  limits?: RunLimits;
  /**
   * the run's agent has integrations: its preparation discovers them, which is tool work, done in
   * the workers' tool slots (core/tool-call.ts toolTaskQueue); absent in runs started before it
   */
  discovers?: boolean;
  /**
   * the names of the tools the run's caller runs (core/caller-tools.ts), declared when it started;
   * their schemas stay in PostgreSQL. Absent for a run without them, and always for a sub-agent's.
   */
  callerTools?: string[];
  /** a sub-agent's run: the run that started it, the root of its tree, and its depth (1 for a child of a root) */
  parent?: { runId: string; rootRunId: string; depth: number; maxDescendants?: number };
  /**
   * a fork (core/fork.ts): its turns are numbered from `turn`, the turn of its original it starts
   * at, and its step cursor starts at `step`; its conversation before that turn is recorded already
   */
  fork?: ForkPoint;
  /**
   * a replay whose calls take recorded results (core/replay.ts): the run it replays, and whether a
   * call the original did not make goes live; absent in every other run (a "live" replay's too)
   */
  replay?: RecordedReplay;
  continued?: RunContinuation;
}

/** What a continued-as-new execution needs to go on where the previous one stopped. */
export interface RunContinuation {
  turns: number;
  eventSeq: number;
  usage: Usage;
  toolCallCount: number;
  lastTextPreview: string;
  /** the run's step cursor (workflows/sampling-steps.ts); absent in continuations made before it: the turns */
  llmSteps?: number;
  run: Omit<PreparedRun, 'pinned'>;
  /** when the run's first execution started (workflow time): its maxDuration counts from it */
  startedAtMs?: number;
  childUsage?: Usage;
  costUsd?: number;
  childCostUsd?: number;
  /** a turn whose tool calls had not all ended: the ones waiting on tasks go on where they were */
  openTurn?: OpenTurn;
  /** the build the previous execution ran on, when it continued at a turn boundary of a versioned run (workflows/upgrade.ts) */
  upgradedFrom?: string;
}

/** One tool call of an open turn: its outcome, or its task wait set aside. */
export interface OpenCall {
  ref: Omit<ToolCallRef, 'type'>;
  summary?: string;
  outcome?: ToolOutcome;
  parked?: ParkedTask;
  /** the run's budget did not let the call be made: its outcome says so, and the run stops after the turn */
  notMade?: LimitName;
  /** a replay's call answered from the recording, not run */
  replayed?: ReplayedCall;
}

export interface OpenTurn {
  calls: OpenCall[];
}

/** For the Web UI and operators; the API reads runs from PostgreSQL. */
export const runStateQuery = defineQuery<RunState>(RUN_STATE_QUERY);

/** Decides a pending approval. Its validator rejects a call already decided. */
export const decideApprovalUpdate = defineUpdate<ApprovalDecisionResult, [DecideApprovalInput]>(DECIDE_APPROVAL_UPDATE);

/** Answers a run waiting for budget (limits.onLimit "ask"). Its validator rejects a request already answered. */
export const decideBudgetUpdate = defineUpdate<BudgetDecisionResult, [DecideBudgetInput]>(DECIDE_BUDGET_UPDATE);

export interface ApprovalDecisionResult {
  toolCallId: string;
  status: 'approved' | 'denied';
}

/**
 * An answer to a stored question of a 2026-era server was written to PostgreSQL: the signal names
 * only the input, so that no answer's content enters the workflow's history.
 */
export const inputAnsweredSignal = defineSignal<[{ inputId: string }]>(INPUT_ANSWERED_SIGNAL);

/** A tool call's activity waits inside for a person's answer, or no longer does (ids only, never the question). */
export const toolCallWaitingSignal = defineSignal<[ToolCallWaiting]>(TOOL_CALL_WAITING_SIGNAL);

/** A caller answered one of the run's caller tool calls: the answer is in PostgreSQL, the signal names only the call. */
export const callerToolAnsweredSignal = defineSignal<[{ toolCallId: string }]>(CALLER_TOOL_ANSWERED_SIGNAL);
