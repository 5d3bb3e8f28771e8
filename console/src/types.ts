/** The shapes of the API's answers the console reads (docs/api.md, /docs); only the fields it shows. */

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled';

export interface RunSummary {
  id: string; threadId: string; agentId: string; status: RunStatus; stopReason: string | null;
  turns: number | null; createdAt: string; endedAt: string | null;
}

export interface ToolCallView {
  id: string; turn: number; name: string; type: string; status: 'ok' | 'error'; durationMs: number;
  result: string; resultBytes: number; arguments?: string; argumentsBytes?: number; childRunId?: string;
}

export interface PendingApproval {
  runId?: string; toolCallId: string; kind?: 'tool_call' | 'sampling'; turn: number; name: string;
  integrationId: string | null; arguments: unknown; requestedAt: string; expiresAt: string;
}

export interface PendingInput {
  runId?: string; inputId: string; toolCallId: string; mode: 'form' | 'url'; message: string;
  requestedSchema?: Record<string, unknown>; url?: string; requestedAt: string; expiresAt: string;
}

/** The limits a run that waits for budget may have raised (POST /v1/runs/:id/budget), as they stood when it asked. */
export interface RaisableLimits { maxCostUsd?: number; maxToolCalls?: number; maxInputTokens?: number; maxOutputTokens?: number }

export interface PendingBudget {
  limitReached: string;
  spent: { costUsd: number; inputTokens: number; outputTokens: number; toolCalls: number };
  limits: RaisableLimits; requestedAt: string; expiresAt: string;
}

/** A call of a tool the run's caller runs, waiting for its result (POST /v1/runs/:id/tool-results/:toolCallId). */
export interface PendingCallerTool { toolCallId: string; name: string; arguments: unknown; askedAt: string; expiresAt: string }

/** A caller tool as its run declared it (GET /v1/runs/:id/caller-tools). */
export interface CallerToolDeclaration { name: string; description?: string; inputSchema: Record<string, unknown> }

export interface Usage { inputTokens: number; outputTokens: number }

/** USD from the operator's price table; priced false: a turn's model had no price, its cost not in usd. */
export interface Cost { usd: number; priced: boolean }

export interface RunView {
  id: string; threadId: string; agentId: string; parentRunId: string | null; status: RunStatus; stopReason: string | null;
  limitReached: string | null; output: string | null; error: { type: string; message: string } | null; turns: number;
  usage: Usage; usageWithChildren: Usage; cost: Cost; costWithChildren: Cost; toolCalls: ToolCallView[];
  pendingApprovals: PendingApproval[]; pendingInputs: PendingInput[]; pendingBudget: PendingBudget | null;
  pendingCallerTools: PendingCallerTool[];
  /** a fork: the run and the turn it was forked from */
  forkedFrom: { runId: string; turn: number } | null;
  createdAt: string; endedAt: string | null;
}

export interface Agent {
  id: string; name: string; description: string | null; integrationIds: string[];
  maxTurns?: number; limits: Record<string, unknown> | null;
}

/**
 * A message of a run's transcript (GET /v1/runs/:id/messages): turn t's reply is slot 0, its i-th
 * tool call's result slot i+1.
 */
export interface RunMessage {
  turn: number; slot: number; role: 'system' | 'user' | 'assistant' | 'tool';
  content: string; contentBytes: number; contentTruncated: boolean;
  toolCalls?: { id: string; name: string; arguments: string; argumentsBytes: number; argumentsTruncated: boolean }[];
  toolCallId?: string; toolName?: string; createdAt: string;
}

export interface RunMessagePage {
  input: { content: string; contentBytes: number; contentTruncated: boolean };
  messages: RunMessage[];
  nextAfter: string | null;
}

export interface Integration {
  id: string; name: string; enabled: boolean;
  transport: { type: 'stdio' | 'http'; url?: string; command?: string; auth?: { type: 'oauth' } };
  protocolEra?: string | null; authorization?: 'not_required' | 'required' | 'authorized' | 'expired'; expiresAt?: string;
}

export interface Capabilities {
  authorization?: string;
  tools: { name: string; title?: string; description?: string }[];
}

export interface ConsoleSettings { temporalUiUrl: string | null; namespace: string }

/** GET /v1/me: who the tab's credential says the caller is. */
export interface Me {
  tenant: { id: string; name: string }; principal: { id: string; name: string }; roles: string[]; operator: boolean;
}
