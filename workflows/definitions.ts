import { defineQuery } from '@temporalio/workflow';
import type { ChatMessage, Usage } from '../core/messages';
import type { ToolRoute, ToolType } from './tool-routing';

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled';
export type StopReason = 'answer' | 'max_turns' | 'cancelled' | 'error';

export interface RunError {
  type: string;
  message: string;
}

/** What a continued-as-new execution needs to go on where the previous one stopped. */
export interface RunContinuation {
  turns: number;
  eventSeq: number;
  usage: Usage;
  toolCallCount: number;
  lastTextPreview: string;
  context: RunContext;
  mcpRoutes: Record<string, ToolRoute>;
  integrationCount: number;
  hasDataSources: boolean;
}

export interface RunWorkflowInput {
  runId: string;
  /** Continue-as-new at a turn boundary once history exceeds this many bytes. */
  continueAsNewAtHistoryBytes?: number;
  continued?: RunContinuation;
}

export interface RunContext {
  threadId: string;
  agentId: string;
  maxTurns: number;
  integrationIds: string[];
  hasDataSources: boolean;
}

export interface DiscoveryResult {
  /** routes of discovered MCP tools, keyed by the exposed name (the tool-name map) */
  mcpRoutes: Record<string, ToolRoute>;
  integrationCount: number;
  unreachable: { integrationId: string; message: string }[];
  /** integrations pinned to their own task queue: discovered there, by discoverPinnedIntegration */
  pinned?: { integrationId: string; taskQueue: string }[];
}

export interface PinnedDiscoveryResult {
  mcpRoutes: Record<string, ToolRoute>;
  unreachable: { integrationId: string; message: string }[];
}

export interface PromptPrefixResult {
  messageCount: number;
  bytes: number;
}

export interface LlmTurnInput {
  runId: string;
  threadId: string;
  agentId: string;
  turn: number;
  nativeTools: string[];
  eventSeq: number;
}

export interface LlmTurnOutput {
  toolCalls: { id: string; name: string }[];
  textPreview: string;
  textBytes: number;
  usage: Usage;
}

/** Every tool activity takes the call by reference: the arguments stay in run_messages. */
export interface ToolCallRef {
  runId: string;
  threadId: string;
  turn: number;
  /** index of the call in the turn's assistant message */
  index: number;
  toolCallId: string;
  name: string;
  eventSeq: number;
}

export interface McpToolCallInput extends ToolCallRef {
  integrationId: string;
  toolName: string;
  toolTimeoutMs: number;
  totalTimeoutMs: number;
}

export interface ToolOutcome {
  status: 'ok' | 'error';
  preview: string;
  resultBytes: number;
  durationMs: number;
  /** set when the call created or replaced a data source of the thread */
  importedDataSource?: boolean;
}

export interface RecordToolResultInput extends ToolCallRef {
  type: ToolType;
  integrationId?: string;
  status: 'ok' | 'error';
  content: string;
}

export interface FinishRunInput {
  runId: string;
  threadId: string;
  agentId: string;
  status: Exclude<RunStatus, 'running'>;
  stopReason: StopReason;
  error: RunError | null;
  turns: number;
  usage: Usage;
  eventSeq: number;
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
  eventSeq: number;
}

export type RunOutcome = Omit<RunState, 'eventSeq'>;

export const runStateQuery = defineQuery<RunState>('runState');

export const RUN_WORKFLOW_TYPE = 'runWorkflow';
export const DEFAULT_CONTINUE_AS_NEW_BYTES = 4 * 1024 * 1024;

/** GET /v1/agents/:id/context: the prefix an agent's next run would get, built by a worker. */
export interface ContextPreviewInput {
  agentId: string;
}

export interface ContextPreview {
  messages: ChatMessage[];
}

export const CONTEXT_PREVIEW_WORKFLOW_TYPE = 'contextPreviewWorkflow';
