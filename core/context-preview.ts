import type { ChatMessage } from './messages';

/**
 * The prompt prefix an agent's next run would get (GET /v1/agents/:id/context): each message with
 * where it came from and its size in the model's tokens.
 */

/** What a prefix message was made of: the agent's own instructions, or one server's conventional prompt. */
export type PrefixSource =
  | { kind: 'instructions' }
  | { kind: 'prompt'; integrationId: string; integrationName: string; prompt: string };

/** How tokens were counted: an OpenAI encoding, or 4 characters a token. */
export type TokenizerName = 'o200k_base' | 'cl100k_base' | 'chars/4';

export type PreviewMessage = ChatMessage & {
  /** in the order they are joined: the system message joins several */
  sources: PrefixSource[];
  /** its content, plus its tool calls' names and arguments */
  tokens: number;
};

/**
 * Why one conventional prompt was or was not injected; `prompt` null: the whole integration
 * (turned off, pinned to another task queue, failed, or offering no prompts).
 */
export interface PromptDecision {
  integrationId: string;
  integrationName: string;
  prompt: string | null;
  injected: boolean;
  reason: string;
}

export interface ContextPreview {
  messages: PreviewMessage[];
  /** per integration in prefix order, then per conventional prompt in the server's listing order */
  decisions: PromptDecision[];
  totalTokens: number;
  /** true: counted as 4 characters a token, the model having no exact tokenizer here */
  tokensEstimated: boolean;
  tokenizer: TokenizerName;
}
