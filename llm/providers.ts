import type { Logger } from '../platform/logger';
import { guardedHttp, type NetworkPolicy } from '../platform/net/address-guard';
import { createAiSdkProvider, type ApiKeyReader } from './ai-sdk-provider';
import { createScriptedProvider } from './scripted';
import type { LlmProviders } from './types';
import type { LlmAnswerBounds } from '../core/llm-answer-bounds';

export interface ProviderOptions {
  /** reads API keys by name from the worker's environment (the composition root passes config.readSecret) */
  readApiKey: ApiKeyReader;
  /** the variables an agent's apiKeyEnv may name (config.llmKeyEnvs); default: the providers' own */
  allowedKeyEnvs?: readonly string[];
  /** where the AI SDK's warnings go (an unknown model's token limit, an unsupported setting), instead of the console */
  logger?: Logger;
  /** which addresses a base URL may resolve to (metadata and link-local never) */
  networkPolicy?: NetworkPolicy;
  /** how much of one answer is read (config.llmAnswerBounds); default: core/llm-answer-bounds.ts's */
  answerBounds?: LlmAnswerBounds;
}

type WarningSink = (options: { warnings: unknown[]; provider: string; model: string }) => void;

/** The providers a worker offers: the scripted one, OpenAI-compatible chat completions and Anthropic Messages. */
export function createProviders({ readApiKey, allowedKeyEnvs, logger, networkPolicy, answerBounds }: ProviderOptions): LlmProviders {
  if (logger) {
    // The AI SDK's only hook for its warnings is this global.
    (globalThis as { AI_SDK_LOG_WARNINGS?: WarningSink }).AI_SDK_LOG_WARNINGS = ({ warnings, provider, model }) =>
      logger.warn({ provider, model, warnings }, 'LLM provider warning');
  }
  const remote = createAiSdkProvider(readApiKey, allowedKeyEnvs, guardedHttp(networkPolicy), answerBounds);
  return { scripted: createScriptedProvider(), openai: remote, anthropic: remote };
}
