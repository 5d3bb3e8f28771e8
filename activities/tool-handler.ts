import type { SubAgentRoute } from '../core/sub-agents';
import type {
  CallerToolWait, ChildRun, InputWait, McpToolRoute, SampledDuringCall, ToolCallRef, ToolOutcome, ToolTask,
} from '../core/tool-call';
import type { Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import type { ToolCallRecord } from '../store/runs/tool-calls';
import type { ActivityDeps } from './deps';
import type { PersonWaits } from './person-waits';
import type { DiscoverySnapshot } from './run-snapshots';
import type { NativeTool } from './tools/native-tool';

/*
 * The contract between the one wrapper every tool call goes through (tool-call.ts) and each kind
 * of tool's own code (tools/): what a handler gets, and what it answers.
 */

/** Every tool activity takes this: the call by reference, and for an MCP tool its route. */
export interface ToolActivityInput extends ToolCallRef {
  route?: McpToolRoute;
  /** the run's tenant: a tenant's cap on its tool calls per worker (toolCallSlots) counts this call; absent before caps */
  tenantId?: string;
  /** a sub-agent's call: which agent, and the root run whose descendants are bounded */
  subAgent?: SubAgentRoute & { rootRunId: string; maxDescendants?: number };
  /** a call coming back with the answers to a stored round of its server's questions (by reference) */
  resume?: { roundId: string };
  /** the run's step cursor when the call was dispatched: a 2025-era server's sampling requests play the steps from here */
  step?: number;
}

/** A tool call's answer to the LLM: what it says, and whether it says the call failed. */
export interface ToolResult {
  status: 'ok' | 'error';
  content: string;
  importedDataSource?: boolean;
  /** no answer yet: the server's questions are stored, and the workflow waits for their answers */
  waiting?: InputWait;
  /** the model answered the server's sampling requests during the call (2025 era): the run adds this */
  sampled?: SampledDuringCall;
  /** no answer yet: the server runs the call as a task, which the workflow polls */
  task?: ToolTask;
  /** no answer yet: the sub-agent's run is recorded, and the workflow runs it */
  child?: ChildRun;
  /** no answer yet: the caller tool's call is stored, and the workflow waits for the caller's answer */
  caller?: CallerToolWait;
}

/** A call its check refused, with the integration it named when that was found. */
export type RejectedCall = ToolResult & { integrationId?: string };

export interface CheckedCall<R> {
  request: R;
  integrationId?: string;
  /** the integration's name, for what the LLM reads when the call waited too long for its turn */
  integrationName?: string;
  /** what the log line and the trace span say about the call, besides its arguments */
  logFields: Record<string, unknown>;
}

/** What a tool's own code gets while it runs. */
export interface ToolRun {
  input: ToolActivityInput;
  deps: ActivityDeps;
  log: Logger;
  signal: AbortSignal;
  heartbeat: () => void;
  /** a routed call's integration, as read with the call: undefined if it no longer exists */
  integration?: Integration;
  /** in an activity: starts a wait for a person's answer inside the call, so that the run is listed as waiting */
  waitingForPerson?: PersonWaits;
}

/** What an LLM turn knows when it describes the native tools. */
export interface DefinitionContext {
  deps: ActivityDeps;
  threadId: string;
  integrations: DiscoverySnapshot['integrations'];
  /** whether the thread may have data sources: false only when the workflow knows it has none */
  hasDataSources: boolean;
}

/**
 * One kind of tool, as activities see it: only what is its own. Everything every tool call does
 * (load by reference, replay a stored result, events, log, timer, trace, heartbeat, store) is
 * toolActivity's, once.
 */
export interface ToolHandler<R, A = Record<string, unknown>> {
  /**
   * A native tool: its kind with the schema its arguments are checked against before `check` sees
   * them (tools/native-tool.ts), and what the LLM is told about it this turn; MCP tools describe
   * themselves.
   */
  native?: {
    tool: NativeTool<A>;
    describe: (ctx: DefinitionContext) => Promise<string> | string;
  };
  span: (input: ToolActivityInput) => string;
  /** checks the arguments against the run (its integrations, its data): a problem is a rejected call */
  check: (args: A, input: ToolActivityInput, deps: ActivityDeps) => Promise<CheckedCall<R> | RejectedCall>;
  /** what the log line and the trace span say about any call, whatever its check found */
  logFields?: (args: Record<string, unknown>) => Record<string, unknown>;
  /** runs the call; the tool's own failures are results, a throw is transient and retried by Temporal */
  execute: (request: R, run: ToolRun) => Promise<ToolResult>;
  /** whether its calls read from the integration their check names, and so count against its slots (activities/tool-slots.ts) */
  usesIntegrationSlot?: boolean;
  /** what an outcome stored before a crash says beyond status and size; every handler is asked, so check `stored.type` */
  restored?: (stored: ToolCallRecord) => Partial<ToolOutcome>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry holds handlers of every request type
export type AnyToolHandler = ToolHandler<any, any>;
