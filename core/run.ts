import type { LimitName } from './run-limits';
import type { Usage } from './messages';

/**
 * What the run workflow, its activities and its clients share: the workflow's identity and the
 * shapes of a run's state. Pure, so that workflow code may import it.
 */
export const RUN_WORKFLOW_TYPE = 'runWorkflow';
export const CAPABILITIES_WORKFLOW_TYPE = 'capabilitiesWorkflow';
export const CONTEXT_PREVIEW_WORKFLOW_TYPE = 'contextPreviewWorkflow';
export const AUTHORIZE_INTEGRATION_WORKFLOW_TYPE = 'authorizeIntegrationWorkflow';
export const COMPLETE_AUTHORIZATION_WORKFLOW_TYPE = 'completeAuthorizationWorkflow';
export const REVOKE_AUTHORIZATION_WORKFLOW_TYPE = 'revokeAuthorizationWorkflow';
/** The query the Web UI and operators use on a running run; the API reads PostgreSQL instead. */
export const RUN_STATE_QUERY = 'runState';
/** The signal that tells a run an MCP server's stored question was answered (its payload: the input id only). */
export const INPUT_ANSWERED_SIGNAL = 'inputAnswered';
/**
 * The signal a tool call's activity sends its run while it waits inside for a person's answer (a
 * 2025-era server's question, a reviewer's decision on its sampling request), and again when it no
 * longer does: the run's `waitingFor` then lists it. Its payload: the tool call's id and a boolean.
 */
export const TOOL_CALL_WAITING_SIGNAL = 'toolCallWaiting';
export interface ToolCallWaiting { toolCallId: string; waiting: boolean }
export const DEFAULT_CONTINUE_AS_NEW_BYTES = 4 * 1024 * 1024;

/** The longest run input, in characters, through every front door (REST, MCP, a sub-agent's call). */
export const MAX_RUN_INPUT_CHARS = 1_000_000;

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled';
export type StopReason = 'answer' | 'max_turns' | 'budget' | 'cancelled' | 'error';

export interface RunError {
  type: string;
  message: string;
}

export interface RunState {
  runId: string;
  status: RunStatus;
  stopReason: StopReason | null;
  turns: number;
  usage: Usage;
  toolCallCount: number;
  lastTextPreview: string;
  error: RunError | null;
  /** with stopReason "budget": the limit that stopped the run */
  limitReached?: LimitName;
  /** the usage of the runs it started as sub-agents (theirs included) */
  childUsage?: Usage;
  /** USD its priced LLM turns cost (each turn's cost as the worker priced it); absent: nothing priced yet */
  costUsd?: number;
  /** USD its sub-agents' runs cost (theirs included) */
  childCostUsd?: number;
  /** when the run's first execution started, in workflow time: its maxDuration counts from it */
  startedAtMs: number;
  eventSeq: number;
}

export type RunOutcome = Omit<RunState, 'eventSeq'>;
