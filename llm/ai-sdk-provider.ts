import { AsyncLocalStorage } from 'node:async_hooks';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText } from 'ai';
import type { ModelConfig } from '../core/agent-model';
import { guardedHttp } from '../platform/net/address-guard';
import { LlmConfigError } from './errors';
import { apiKeyEnvProblem, DEFAULT_LLM_KEY_ENVS, keyEnvFor, PROVIDER_ENDPOINTS } from '../core/llm-keys';
import type { LlmProvider, LlmRequest, LlmResponse } from './types';
import { fromSdkToolCalls, toModelMessages, toToolSet } from './wire-messages';
import { liveStreamFetch } from './live-stream';
import type { LiveSink } from './stream-reading';
import { finishOf, streamModel, usageOfSdk, type StreamingModel } from './model-stream';
import { DEFAULT_LLM_ANSWER_BOUNDS, type LlmAnswerBounds } from '../core/llm-answer-bounds';

type RemoteModel = Extract<ModelConfig, { provider: 'openai' | 'anthropic' }>;

/** Reads a secret from the worker's environment by name; keys never enter history or the database. */
export type ApiKeyReader = (envName: string) => string | undefined;

/**
 * The key for a model, read only when the policy lets it go to this model's endpoint. A key named
 * in `apiKeyEnv` must be allowed and set; a custom baseUrl without one gets no key (Ollama, vLLM and
 * llama.cpp servers usually need none).
 */
function apiKeyFor(model: RemoteModel, readKey: ApiKeyReader, allowedKeyEnvs: readonly string[]): string | undefined {
  const refused = apiKeyEnvProblem(model, allowedKeyEnvs);
  if (refused) throw new LlmConfigError(`The ${model.provider} model "${model.name}": ${refused}`);
  const envName = keyEnvFor(model);
  if (envName === undefined) return undefined;
  const key = readKey(envName);
  if (!key) {
    throw new LlmConfigError(`The ${model.provider} model "${model.name}" needs an API key: set ${envName} in the worker's environment`);
  }
  return key;
}

type GuardedHttp = ReturnType<typeof guardedHttp>;

/** The model call under way's callbacks, for the shared fetch of its (cached) language model. */
const sinks = new AsyncLocalStorage<LiveSink>();
/** How many language models a provider keeps: an agent's model is made once, not per turn. */
const MODELS_KEPT = 32;

/**
 * A provider package builds its chunk schemas with each language model, and zod prepares a schema
 * on its first use: made per turn, that cost more than reading the whole stream. So the models
 * are kept (the last MODELS_KEPT, by provider, name, base URL and key), with one fetch that hands
 * the words to the call under way.
 */
function modelCache(http: GuardedHttp, bounds: LlmAnswerBounds): (model: RemoteModel, apiKey: string | undefined) => StreamingModel {
  const models = new Map<string, StreamingModel>();
  return (model, apiKey) => {
    const baseURL = model.baseUrl ?? PROVIDER_ENDPOINTS[model.provider].baseUrl;
    const key = JSON.stringify([model.provider, model.name, baseURL, apiKey ?? null]);
    const kept = models.get(key);
    if (kept) {
      models.delete(key);
      models.set(key, kept);
      return kept;
    }
    const fetch = liveStreamFetch(http.fetch, http.request, model.provider, () => sinks.getStore() ?? {}, bounds);
    const made = model.provider === 'anthropic'
      // Anthropic's provider reads ANTHROPIC_API_KEY itself when none is given; an explicit empty header keeps it ours.
      ? createAnthropic({ baseURL, apiKey: apiKey ?? '', fetch }).languageModel(model.name)
      // includeUsage asks for the final usage chunk when streaming (stream_options.include_usage).
      : createOpenAICompatible({ name: 'openai', baseURL, apiKey, includeUsage: true, fetch }).chatModel(model.name);
    models.set(key, made);
    if (models.size > MODELS_KEPT) models.delete(models.keys().next().value as string);
    return made;
  };
}

/**
 * OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp server, any base URL) and
 * Anthropic Messages, through the AI SDK. The SDK's retries are off (`maxRetries: 0`): Temporal's
 * retry policy is the only one, so attempts never multiply. Requests go through `fetch`, which refuses
 * metadata and link-local addresses (see platform/net/address-guard); a streamed answer's words
 * reach the request's callbacks from live-stream.ts as they come. Every answer is read within `bounds`.
 */
export function createAiSdkProvider(
  readKey: ApiKeyReader, allowedKeyEnvs: readonly string[] = DEFAULT_LLM_KEY_ENVS, http: GuardedHttp = guardedHttp(),
  bounds: LlmAnswerBounds = DEFAULT_LLM_ANSWER_BOUNDS,
): LlmProvider {
  const languageModel = modelCache(http, bounds);
  return {
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const model = request.model;
      if (model.provider !== 'openai' && model.provider !== 'anthropic') throw new Error(`not a remote model: ${model.provider}`);
      const settings = {
        model: languageModel(model, apiKeyFor(model, readKey, allowedKeyEnvs)),
        messages: toModelMessages(request.messages),
        ...(request.tools.length > 0 ? { tools: toToolSet(request.tools) } : {}),
        temperature: request.temperature ?? model.temperature,
        maxOutputTokens: request.maxTokens === undefined
          ? model.maxTokens
          : Math.min(request.maxTokens, model.maxTokens ?? request.maxTokens),
        maxRetries: 0,
        abortSignal: request.signal,
        allowSystemInMessages: true,
      };
      // Streaming unless the model says otherwise: the words reach event streams as they come.
      if (model.stream === false) {
        const result = await generateText(settings);
        return {
          text: result.text,
          toolCalls: fromSdkToolCalls(result.toolCalls),
          usage: usageOfSdk(result.usage),
          finishReason: finishOf(result.finishReason),
        };
      }
      return sinks.run({ onText: request.onText, onToolInput: request.onToolInput }, () => streamModel(settings.model, settings));
    },
  };
}


