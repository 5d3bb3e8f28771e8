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

export interface Usage { inputTokens: number; outputTokens: number }

export interface RunView {
  id: string; threadId: string; agentId: string; parentRunId: string | null; status: RunStatus; stopReason: string | null;
  limitReached: string | null; output: string | null; error: { type: string; message: string } | null; turns: number;
  usage: Usage; usageWithChildren: Usage; toolCalls: ToolCallView[]; pendingApprovals: PendingApproval[];
  pendingInputs: PendingInput[]; createdAt: string; endedAt: string | null;
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
