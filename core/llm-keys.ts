import type { ModelConfig } from './agent-model';

/**
 * Which LLM key goes where. An agent names a key by environment variable (`apiKeyEnv`), so an
 * unchecked name would let whoever writes an agent send any variable of the worker (DATABASE_URL)
 * to any URL. Only variables the operator allowed may be named, and a provider's default key goes
 * only to that provider's own endpoint.
 */

export const DEFAULT_LLM_KEY_ENVS = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'] as const;

export const PROVIDER_ENDPOINTS = {
  openai: { baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY' },
  anthropic: { baseUrl: 'https://api.anthropic.com/v1', apiKeyEnv: 'ANTHROPIC_API_KEY' },
} as const;

type RemoteModel = Extract<ModelConfig, { provider: 'openai' | 'anthropic' }>;

/** Why a model's apiKeyEnv is refused (naming the variable, which is a name, not a secret), or undefined. */
export function apiKeyEnvProblem(model: ModelConfig, allowed: readonly string[]): string | undefined {
  if (model.provider === 'scripted' || model.apiKeyEnv === undefined || allowed.includes(model.apiKeyEnv)) return undefined;
  return `apiKeyEnv names ${model.apiKeyEnv}, which the operator has not allowed: allowed are ${allowed.join(', ')}`
    + ' (others can be added with LLM_KEY_ENVS)';
}

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
};

/**
 * The variable whose value authenticates this model's requests, or undefined when none may be
 * sent: a custom baseUrl gets a key only when the agent names one, so that the worker's
 * OPENAI_API_KEY never travels to a server that is not OpenAI's.
 */
export function keyEnvFor(model: RemoteModel): string | undefined {
  if (model.apiKeyEnv) return model.apiKeyEnv;
  const own = PROVIDER_ENDPOINTS[model.provider];
  if (model.baseUrl === undefined || originOf(model.baseUrl) === originOf(own.baseUrl)) return own.apiKeyEnv;
  return undefined;
}
