import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import {
  asLanguageModelUsage, convertToLanguageModelPrompt, prepareCallSettings, prepareToolsAndToolChoice, standardizePrompt,
} from 'ai/internal';
import type { ToolCall, Usage } from '../core/messages';
import type { LlmResponse } from './types';
import { fromSdkToolCalls } from './wire-messages';

/** A provider package's language model (what `createAnthropic` and `createOpenAICompatible` give): the AI SDK's v3 specification. */
export type StreamingModel = Extract<LanguageModel, { specificationVersion: 'v3' }>;

export interface StreamSettings {
  messages: ModelMessage[];
  tools?: ToolSet;
  temperature?: number;
  maxOutputTokens?: number;
  abortSignal: AbortSignal;
}

/**
 * One streamed model call, read from the provider package's own stream (its `doStream`), with the
 * AI SDK's prompt and tool preparation (its `ai/internal` entry, the same functions `streamText`
 * calls) and none of `streamText`'s machinery around it (steps, transforms, callbacks, promises
 * per part): one step, no tools run. The words reached the request's callbacks before, as the
 * event stream came (live-stream.ts): the stream read here is the whole answer. An HTTP error before the stream is thrown by `doStream`;
 * an error part (a broken stream) is thrown as is; `finish` gives the usage and the stop reason.
 */
export async function streamModel(model: StreamingModel, settings: StreamSettings): Promise<LlmResponse> {
  const standardized = await standardizePrompt({ messages: settings.messages, allowSystemInMessages: true });
  const prompt = await convertToLanguageModelPrompt({
    prompt: standardized, supportedUrls: await model.supportedUrls, download: undefined, abortSignal: settings.abortSignal,
  });
  const { tools, toolChoice } = await prepareToolsAndToolChoice({ tools: settings.tools, toolChoice: undefined, activeTools: undefined });
  const call = prepareCallSettings({ temperature: settings.temperature, maxOutputTokens: settings.maxOutputTokens });
  const { stream } = await model.doStream({
    ...call, prompt, tools, toolChoice, abortSignal: settings.abortSignal, includeRawChunks: false,
  });
  let text = '';
  const calls: { toolCallId: string; toolName: string; input: unknown }[] = [];
  let usage: Usage = { inputTokens: 0, outputTokens: 0 };
  let finishReason: LlmResponse['finishReason'];
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      if (part.type === 'text-delta') text += part.delta;
      else if (part.type === 'tool-call') calls.push(part);
      else if (part.type === 'finish') {
        usage = usageOfSdk(asLanguageModelUsage(part.usage));
        finishReason = finishOf(part.finishReason.unified);
      } else if (part.type === 'error') throw part.error;
    }
  } catch (err) {
    // Whatever broke, the response body is let go of.
    await reader.cancel().catch(() => undefined);
    throw err;
  }
  if (settings.abortSignal.aborted) throw new DOMException('The LLM request was aborted', 'AbortError');
  const toolCalls: ToolCall[] = fromSdkToolCalls(calls);
  return { text, toolCalls, usage, ...(finishReason ? { finishReason } : {}) };
}

export function finishOf(reason: string | undefined): LlmResponse['finishReason'] {
  return reason === 'length' ? 'length' : reason === 'stop' ? 'stop' : 'other';
}

/** The SDK's usage as the engine counts it: input tokens include the cached ones the provider read. */
export function usageOfSdk(usage: {
  inputTokens?: number; outputTokens?: number; inputTokenDetails?: { cacheReadTokens?: number | undefined };
} | undefined): Usage {
  const cached = usage?.inputTokenDetails?.cacheReadTokens ?? 0;
  const counted = { inputTokens: usage?.inputTokens ?? 0, outputTokens: usage?.outputTokens ?? 0 };
  return cached > 0 ? { ...counted, cachedInputTokens: cached } : counted;
}
