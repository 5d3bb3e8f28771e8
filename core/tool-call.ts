import type { SubAgentRoute } from './sub-agents';
import type { ApprovalRequirement } from './approval';
import type { Usage } from './messages';
import type { SamplingRef } from './sampling';

/**
 * A tool call as the workflow hands it to an activity: by reference, since the arguments stay in
 * run_messages and never pass through workflow history. Pure, so that workflow code may import it.
 */
export interface ToolCallRef {
  runId: string;
  threadId: string;
  turn: number;
  /** index of the call in the turn's assistant message */
  index: number;
  toolCallId: string;
  /** the name the LLM called */
  name: string;
  /** the tool kind the workflow routed the call to (workflows/tool-kinds.ts) */
  type: string;
  /** tool_call_started's number; tool_call_ended's is the next, or the fourth for a sub-agent's call (`childEvents`) */
  eventSeq: number;
  /** a sub-agent's call: child_run_started and child_run_ended take eventSeq + 1 and + 2 */
  childEvents?: boolean;
  /** a caller tool's call: caller_tool_call takes eventSeq + 1 */
  callerEvents?: boolean;
}

/** The number of a call's tool_call_ended event. */
export const endedSeqOf = (ref: Pick<ToolCallRef, 'eventSeq' | 'childEvents' | 'callerEvents'>) =>
  ref.eventSeq + (ref.childEvents ? 3 : ref.callerEvents ? 2 : 1);

/** What the workflow keeps of a finished call: enough to decide, never the result itself. */
export interface ToolOutcome {
  status: 'ok' | 'error';
  resultBytes: number;
  /** set when the call created or replaced a data source of the thread */
  importedDataSource?: boolean;
  /** set instead of a result when a 2026-era server's questions are stored: the workflow waits for their answers */
  waiting?: InputWait;
  /** a 2025-era server had the model answer its sampling requests during the call */
  sampled?: SampledDuringCall;
  /** set instead of a result when the server runs the call as a task: the workflow polls it */
  task?: ToolTask;
  /** set instead of a result when the call is a sub-agent's: its run is recorded, the workflow runs it as a child */
  child?: ChildRun;
  /**
   * set instead of a result when the worker already runs as many calls of the call's integration as
   * it may: nothing ran, and the workflow dispatches the call again after a pause (workflows/call-tool.ts)
   */
  busy?: BusyIntegration;
  /** set instead of a result when the call is a caller tool's: it is stored, and the workflow waits for the caller's answer */
  caller?: CallerToolWait;
}

/** A caller tool's call the caller has not answered yet (core/caller-tools.ts): stored, and the workflow waits this long. */
export interface CallerToolWait {
  timeoutMs: number;
}

/** An integration whose calls took all the slots a worker gives it: what the LLM is told if the call waits too long. */
export interface BusyIntegration {
  integrationName: string;
  maxConcurrentCalls: number;
  /** set when what was full is the run's tenant's share of the worker (its toolCallSlots), not the integration's */
  tenantToolCallSlots?: number;
}

/** A sub-agent's run, recorded for the call that asks it: the workflow starts it as a child workflow. */
export interface ChildRun {
  runId: string;
  threadId: string;
  agentId: string;
}

/** A tool call its server runs as a task, by reference: the reference itself stays in PostgreSQL. */
export interface ToolTask {
  taskRefId: string;
  /** the server's suggested poll interval, bounded (1 s to 60 s) */
  pollIntervalMs?: number;
  /** the integration's taskTimeout: how long the task may take in all */
  timeoutMs: number;
}

/**
 * A task wait set aside for a continue-as-new: all the next execution needs to poll on where this
 * one stopped (the reference itself stays in PostgreSQL, named by taskRefId).
 */
export interface ParkedTask {
  task: ToolTask;
  /** when the task's taskTimeout runs out, epoch ms */
  deadline: number;
  backoff: number;
  suggested: number;
}

/** What the run adds for sampling answered inside a call: the usage, and the steps of its step cursor played. */
export interface SampledDuringCall {
  usage: Usage;
  steps: number;
  /** USD its priced answers cost (the run's maxCostUsd counts it) */
  costUsd?: number;
}

/** A round of an MCP server's questions, stored in PostgreSQL, that the workflow waits for with no activity running. */
export interface InputWait {
  roundId: string;
  /** the round's pending inputs: the answers the workflow waits for (an answer's signal names its input) */
  inputIds: string[];
  /** 1 for the call's first round */
  round: number;
  /** how long the round waits for its answers: the integration's elicitationTimeout */
  timeoutMs: number;
  /**
   * the round's sampling requests, in the server's order: each is answered by a step of the
   * workflow once the round's questions are answered; those a reviewer decides first are among `inputIds`
   */
  samplings?: SamplingRef[];
}

/**
 * The task queue of a worker's tool work (tool calls, discovery, the API's questions to MCP servers)
 * beside the queue of its workflows and LLM turns: every worker polls both, each with its own slots,
 * so that calls which hang can never take the slots LLM turns need. A pinned integration's work goes
 * to its own queue instead.
 */
export const toolTaskQueue = (taskQueue: string) => `${taskQueue}-tools`;

/**
 * Where an MCP tool call goes, decided once per run by discovery. It carries the numbers the
 * workflow needs to size the activity around the call, so the workflow never reads config.
 */
export interface McpToolRoute {
  integrationId: string;
  integrationName: string;
  toolName: string;
  /** per-request timeout; progress notifications restart it */
  toolTimeoutMs: number;
  /** bound on the whole call, progress or not */
  totalTimeoutMs: number;
  /**
   * annotated read-only or idempotent by an integration whose annotations are trusted, or of an
   * integration whose server deduplicates calls by their idempotency key (retryNonIdempotent)
   */
  retryable: boolean;
  /** how many calls of its integration one worker runs at once (activities/tool-slots.ts); absent in routes made before it: the default */
  maxConcurrentCalls?: number;
  /**
   * an integration with elicitation: how long the call may wait, in all, for answers to the
   * server's questions; the activity's bound includes it
   */
  elicitationTimeoutMs?: number;
  /** the task queue of a pinned integration: its calls run only on workers polling it */
  taskQueue?: string;
  /** set when the integration's policy makes calls of this tool wait for a person's approval */
  approval?: ApprovalRequirement;
  /** the server may run a call as a task: the call asks for one, and the workflow polls it (workflows/task-wait.ts) */
  task?: { timeoutMs: number };
}

/** The tools a run can offer, decided at its start; source_query joins once a CSV is imported. */
export interface ToolAvailability {
  /** routes of discovered MCP tools, keyed by the name the LLM sees (the tool-name map) */
  mcpRoutes: Record<string, McpToolRoute>;
  integrationCount: number;
  hasDataSources: boolean;
  /**
   * integrations that need OAuth authorization, as the LLM would see them: `<integration>__` (their
   * tools could not be listed). A call to one of their tools is told an operator must authorize it.
   */
  unauthorized?: { prefix: string; integrationName: string }[];
  /** the agent's sub-agents, keyed by their tool's name (`agent__<name>`); absent at the deepest level */
  subAgents?: Record<string, SubAgentRoute>;
  /** the names of the tools the run's caller runs (core/caller-tools.ts); their schemas stay in PostgreSQL */
  callerTools?: string[];
}

/**
 * The events of a turn's calls past its maxToolCallsPerTurn, which the LLM turn's activity answers
 * itself: right after the turn's own two (turn_started at `turnSeq`, turn_ended the next), each
 * call's tool_call_started, then its tool_call_ended, in the model's order. The workflow takes
 * their numbers from its counter when the reply comes (LlmTurnOutput.refusedToolCalls).
 */
export const refusedCallSeq = (turnSeq: number, i: number) => turnSeq + 2 + 2 * i;
export const REFUSED_CALL_EVENTS = 2;
