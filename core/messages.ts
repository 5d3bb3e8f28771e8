/** Provider-neutral conversation messages, as stored in run_messages and messages. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** of the input tokens, those the provider read from its prompt cache, where it reports them */
  cachedInputTokens?: number;
}

/** Two usages added up; an absent one counts nothing. */
export const addUsage = (a: Usage, b: Usage | undefined): Usage => ({
  inputTokens: a.inputTokens + (b?.inputTokens ?? 0), outputTokens: a.outputTokens + (b?.outputTokens ?? 0),
});
