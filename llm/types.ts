import type { ModelConfig } from '../core/agent-model';
import type { ChatMessage, ToolCall, ToolDefinition, Usage } from '../core/messages';

export interface LlmRequest {
  model: ModelConfig;
  /** prefix, thread history and this run's transcript, in order */
  messages: ChatMessage[];
  tools: ToolDefinition[];
  /** 1-based turn within the run */
  turn: number;
  signal: AbortSignal;
}

export interface LlmResponse {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
}

export interface LlmProvider {
  complete(request: LlmRequest): Promise<LlmResponse>;
}

export type LlmProviders = Partial<Record<ModelConfig['provider'], LlmProvider>>;
