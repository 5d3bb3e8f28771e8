import { createScriptedProvider } from './scripted';
import type { LlmProviders } from './types';

/** The providers a worker offers. OpenAI-compatible and Anthropic providers plug in here. */
export function createProviders(): LlmProviders {
  return { scripted: createScriptedProvider() };
}
