import type { ModelConfig } from '../core/agent-model';
import type { ChatMessage, ToolCall, ToolDefinition, Usage } from '../core/messages';

export interface LlmRequest {
  model: ModelConfig;
  /** prefix, thread history and this run's transcript, in order */
  messages: ChatMessage[];
  tools: ToolDefinition[];
  /** 1-based turn within the run */
  turn: number;
  /**
   * the run's step cursor: how many model steps (turns and sampling answers) the run played before
   * this one; the scripted provider plays the script step at this index
   */
  step: number;
  /** a sampling answer's cap, below the model's own maxTokens */
  maxTokens?: number;
  /** a sampling request's temperature, over the model's */
  temperature?: number;
  signal: AbortSignal;
  /** the reply's text as the model writes it, piece by piece (providers that stream call it); never waits */
  onText?: (text: string) => void;
  /** a tool call's arguments (JSON text) as the model writes them, where the provider streams them */
  onToolInput?: (toolCallId: string, text: string) => void;
}

export interface LlmResponse {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  /** `length` when the reply stopped at its token cap */
  finishReason?: 'stop' | 'length' | 'other';
}

export interface LlmProvider {
  complete(request: LlmRequest): Promise<LlmResponse>;
}

export type LlmProviders = Partial<Record<ModelConfig['provider'], LlmProvider>>;
