/**
 * Sampling: an MCP server asking the run's model for a completion (sampling/createMessage), and
 * how the engine answers it. Pure, so that workflow code may import it.
 *
 * The request reaches the model isolated from the run: only the server's own messages and its
 * systemPrompt, never the agent's instructions, the prompt prefix, the thread or other tool
 * results (`includeContext` is read as `none`); its tools, toolChoice and modelPreferences are
 * ignored, and its maxTokens is capped by the integration's samplingMaxTokens.
 */

/** Per integration: never (the capability is not declared), approve (a reviewer decides each request first), allow. */
export type SamplingMode = 'never' | 'approve' | 'allow';
export const SAMPLING_MODES: SamplingMode[] = ['never', 'approve', 'allow'];
export const DEFAULT_SAMPLING_MAX_TOKENS = 1024;
/** At most this many sampling requests per tool call, in all its rounds. */
export const MAX_SAMPLINGS_PER_CALL = 8;
/** A request larger than this (its messages and systemPrompt, as JSON) is refused unseen. */
export const MAX_SAMPLING_REQUEST_BYTES = 64 * 1024;

/** One message of the request as the model gets it: text only (other content is named, not passed). */
export interface SamplingMessage {
  role: 'user' | 'assistant';
  text: string;
}

/** What is stored, shown to a reviewer, and given to the model. */
export interface SamplingRequest {
  messages: SamplingMessage[];
  systemPrompt?: string;
  /** the server's maxTokens, capped by the integration's samplingMaxTokens */
  maxTokens: number;
  temperature?: number;
}

/** The answer the server gets (2025-11-25 CreateMessageResult; the 2026-era input response has the same fields). */
export interface SamplingAnswer {
  role: 'assistant';
  model: string;
  content: { type: 'text'; text: string };
  stopReason: 'endTurn' | 'maxTokens';
}

export type SamplingStatus = 'pending' | 'approved' | 'denied' | 'answered' | 'failed' | 'timed_out' | 'cancelled';

/** A sampling request as the workflow knows it: by id, never its messages. */
export interface SamplingRef {
  samplingId: string;
  /** the round's wait includes the reviewer's decision on it */
  needsApproval: boolean;
}

/** The texts the LLM reads (contract). */
export const samplingText = {
  denied: () => 'Sampling request denied by a reviewer.',
  tooMany: (max: number) => `MCP server asked for sampling more than ${max} times; the call was abandoned.`,
  failed: (message: string) => `MCP server's sampling request failed: ${message}`,
};

const PLACEHOLDER: Record<string, string> = {
  image: '[image omitted]', audio: '[audio omitted]', resource_link: '[resource link omitted]',
};

function contentText(content: unknown): string {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks.map((b) => {
    const block = (b ?? {}) as { type?: unknown; text?: unknown };
    if (block.type === 'text' && typeof block.text === 'string') return block.text;
    return PLACEHOLDER[String(block.type)] ?? `[${String(block.type ?? 'unknown').slice(0, 32)} omitted]`;
  }).join('\n');
}

/**
 * The request as the model gets it, from the server's (schema-checked) params; a string says why
 * it is refused. tools, toolChoice, modelPreferences, includeContext, stopSequences and metadata
 * are dropped here, so no later step can pass them on.
 */
export function samplingRequest(params: {
  messages: { role: string; content: unknown }[]; systemPrompt?: string; maxTokens: number; temperature?: number;
}, maxTokensCap: number): SamplingRequest | string {
  const messages = params.messages.map((m): SamplingMessage => ({
    role: m.role === 'assistant' ? 'assistant' : 'user', text: contentText(m.content),
  }));
  if (messages.length === 0) return 'a sampling request without messages';
  const request: SamplingRequest = {
    messages,
    ...(params.systemPrompt ? { systemPrompt: params.systemPrompt } : {}),
    maxTokens: Math.max(1, Math.min(Math.floor(params.maxTokens), maxTokensCap)),
    ...(typeof params.temperature === 'number' && params.temperature >= 0 && params.temperature <= 2
      ? { temperature: params.temperature } : {}),
  };
  if (new TextEncoder().encode(JSON.stringify(request)).length > MAX_SAMPLING_REQUEST_BYTES) {
    return `a sampling request over ${MAX_SAMPLING_REQUEST_BYTES} bytes`;
  }
  return request;
}
