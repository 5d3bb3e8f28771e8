import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, type LanguageModel } from 'ai';
import type { ModelConfig } from '../agent-model';
import type { ToolCall, Usage } from '../messages';
import { LlmConfigError } from './errors';
import type { LlmProvider, LlmRequest, LlmResponse } from './types';
import { fromSdkToolCalls, toModelMessages, toToolSet } from './wire-messages';

type RemoteModel = Extract<ModelConfig, { provider: 'openai' | 'anthropic' }>;

/** Reads a secret from the worker's environment by name; keys never enter history or the database. */
export type ApiKeyReader = (envName: string) => string | undefined;

const DEFAULTS = {
  openai: { baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY' },
  anthropic: { baseUrl: 'https://api.anthropic.com/v1', apiKeyEnv: 'ANTHROPIC_API_KEY' },
} as const;

/**
 * The key for a model. A key named in `apiKeyEnv` must be set. The default key may be absent
 * when `baseUrl` points elsewhere: Ollama, vLLM and llama.cpp servers usually need none.
 */
function apiKeyFor(model: RemoteModel, readKey: ApiKeyReader): string | undefined {
  const envName = model.apiKeyEnv ?? DEFAULTS[model.provider].apiKeyEnv;
  const key = readKey(envName);
  if (key) return key;
  if (model.apiKeyEnv || !model.baseUrl) {
    throw new LlmConfigError(`The ${model.provider} model "${model.name}" needs an API key: set ${envName} in the worker's environment`);
  }
  return undefined;
}

function languageModel(model: RemoteModel, readKey: ApiKeyReader): LanguageModel {
  const apiKey = apiKeyFor(model, readKey);
  const baseURL = model.baseUrl ?? DEFAULTS[model.provider].baseUrl;
  if (model.provider === 'anthropic') {
    // Anthropic's provider reads ANTHROPIC_API_KEY itself when none is given; an explicit empty header keeps it ours.
    return createAnthropic({ baseURL, apiKey: apiKey ?? '' }).languageModel(model.name);
  }
  // includeUsage asks for the final usage chunk when streaming (stream_options.include_usage).
  return createOpenAICompatible({ name: 'openai', baseURL, apiKey, includeUsage: true }).chatModel(model.name);
}

/**
 * OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp server, any base URL) and
 * Anthropic Messages, through the AI SDK. The SDK's retries are off (`maxRetries: 0`): Temporal's
 * retry policy is the only one, so attempts never multiply.
 */
export function createAiSdkProvider(readKey: ApiKeyReader): LlmProvider {
  return {
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const model = request.model;
      if (model.provider !== 'openai' && model.provider !== 'anthropic') throw new Error(`not a remote model: ${model.provider}`);
      const settings = {
        model: languageModel(model, readKey),
        messages: toModelMessages(request.messages),
        ...(request.tools.length > 0 ? { tools: toToolSet(request.tools) } : {}),
        temperature: model.temperature,
        maxOutputTokens: model.maxTokens,
        maxRetries: 0,
        abortSignal: request.signal,
        allowSystemInMessages: true,
      };
      if (!model.stream) {
        const result = await generateText(settings);
        return { text: result.text, toolCalls: fromSdkToolCalls(result.toolCalls), usage: usageOf(result.usage) };
      }
      // The error part is thrown by collectStream; the SDK's default onError would only log it again.
      return collectStream(streamText({ ...settings, onError: () => {} }));
    },
  };
}

/** Reads the whole stream; an error part (a 429 before the first byte, a broken stream) is thrown as is. */
async function collectStream(result: ReturnType<typeof streamText>): Promise<LlmResponse> {
  let text = '';
  const calls: { toolCallId: string; toolName: string; input: unknown }[] = [];
  let usage: Usage = { inputTokens: 0, outputTokens: 0 };
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') text += part.text;
    else if (part.type === 'tool-call') calls.push(part);
    else if (part.type === 'finish') usage = usageOf(part.totalUsage);
    else if (part.type === 'error') throw part.error;
    else if (part.type === 'abort') throw new DOMException('The LLM request was aborted', 'AbortError');
  }
  const toolCalls: ToolCall[] = fromSdkToolCalls(calls);
  return { text, toolCalls, usage };
}

function usageOf(usage: { inputTokens?: number; outputTokens?: number } | undefined): Usage {
  return { inputTokens: usage?.inputTokens ?? 0, outputTokens: usage?.outputTokens ?? 0 };
}
