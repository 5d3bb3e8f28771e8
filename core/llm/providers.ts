import type { Logger } from '../logger';
import { createAiSdkProvider, type ApiKeyReader } from './ai-sdk-provider';
import { createScriptedProvider } from './scripted';
import type { LlmProviders } from './types';

export interface ProviderOptions {
  /** reads API keys by name from the worker's environment (the composition root passes config.readSecret) */
  readApiKey: ApiKeyReader;
  /** where the AI SDK's warnings go (an unknown model's token limit, an unsupported setting), instead of the console */
  logger?: Logger;
}

type WarningSink = (options: { warnings: unknown[]; provider: string; model: string }) => void;

/** The providers a worker offers: the scripted one, OpenAI-compatible chat completions and Anthropic Messages. */
export function createProviders({ readApiKey, logger }: ProviderOptions): LlmProviders {
  if (logger) {
    // The AI SDK's only hook for its warnings is this global.
    (globalThis as { AI_SDK_LOG_WARNINGS?: WarningSink }).AI_SDK_LOG_WARNINGS = ({ warnings, provider, model }) =>
      logger.warn({ provider, model, warnings }, 'LLM provider warning');
  }
  const remote = createAiSdkProvider(readApiKey);
  return { scripted: createScriptedProvider(), openai: remote, anthropic: remote };
}
