import { APICallError } from 'ai';
import { AddressRefusedError } from '../platform/net/address-guard';

/**
 * What a provider failure means for the run, decided once. The LLM activity turns it into a
 * Temporal failure: `retryable` into a retryable failure (with `retryAfterMs` as its next retry
 * delay when the server asked for one), anything else into a non-retryable failure of that type.
 */
export type LlmFailureType =
  | 'LlmRateLimited' | 'LlmServerError' | 'LlmNetworkError'
  | 'LlmBadRequest' | 'LlmAuthError' | 'LlmNotFound' | 'LlmContextLength' | 'LlmConfigError' | 'LlmAnswerTooLarge';

export interface LlmFailure {
  type: LlmFailureType;
  message: string;
  retryable: boolean;
  retryAfterMs?: number;
}

/** A configuration problem found before any request (a missing key): never worth retrying. */
export class LlmConfigError extends Error {
  override name = 'LlmConfigError';
}

/** The model's answer passed one of the worker's bounds (llm/answer-bounds.ts): asking again would read the same answer. */
export class LlmAnswerTooLarge extends Error {
  override name = 'LlmAnswerTooLarge';
}

/** A server may ask for hours; the run should fail in minutes instead, through the bounded attempts. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

// OpenAI, vLLM, Anthropic, llama.cpp server, Azure and LiteLLM phrasings of "the prompt does not fit".
const CONTEXT_LENGTH = new RegExp([
  'context[_ ]length', 'maximum context', 'context window', 'context size', 'prompt is too long', 'too many tokens', 'exceed_context_size',
].join('|'), 'i');

export function classifyLlmError(err: unknown): LlmFailure {
  if (err instanceof LlmConfigError) return { type: 'LlmConfigError', message: err.message, retryable: false };
  // Thrown by the provider's fetch, it may reach here as the cause of the SDK's own error.
  const tooLarge = err instanceof LlmAnswerTooLarge ? err : (err as { cause?: unknown } | undefined)?.cause;
  if (tooLarge instanceof LlmAnswerTooLarge) return { type: 'LlmAnswerTooLarge', message: tooLarge.message, retryable: false };
  // The base URL resolves to a refused address: asking again will not change the answer.
  if (err instanceof AddressRefusedError) return { type: 'LlmConfigError', message: err.message, retryable: false };
  if (!APICallError.isInstance(err)) {
    // Parse errors of a half-sent stream, sockets reset mid-body and the like: transient.
    return { type: 'LlmNetworkError', message: errorMessage(err), retryable: true };
  }
  const status = err.statusCode;
  const detail = providerMessage(err);
  if (status === undefined) return { type: 'LlmNetworkError', message: `LLM request failed: ${detail}`, retryable: true };
  // A 2xx whose body broke off (a stream cut halfway): the request was fine, asking again may do.
  if (status >= 200 && status < 300) return { type: 'LlmNetworkError', message: `LLM response broke off: ${detail}`, retryable: true };
  const message = `LLM provider answered ${status}: ${detail}`;
  if (CONTEXT_LENGTH.test(`${err.responseBody ?? ''} ${err.message}`) && (status === 400 || status === 413 || status === 422)) {
    return { type: 'LlmContextLength', message: `The conversation does not fit the model's context window: ${detail}`, retryable: false };
  }
  const retryAfterMs = parseRetryAfter(err.responseHeaders);
  if (status === 429) return { type: 'LlmRateLimited', message, retryable: true, retryAfterMs };
  if (status >= 500 || status === 408 || status === 409) return { type: 'LlmServerError', message, retryable: true, retryAfterMs };
  if (status === 401 || status === 403) return { type: 'LlmAuthError', message, retryable: false };
  if (status === 404) return { type: 'LlmNotFound', message, retryable: false };
  return { type: 'LlmBadRequest', message, retryable: false };
}

/** `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date; capped. */
export function parseRetryAfter(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1]?.trim();
  let ms: number | undefined;
  const msHeader = get('retry-after-ms');
  if (msHeader && /^\d+(\.\d+)?$/.test(msHeader)) ms = Number(msHeader);
  const header = get('retry-after');
  if (ms === undefined && header) {
    if (/^\d+(\.\d+)?$/.test(header)) ms = Number(header) * 1000;
    else if (!Number.isNaN(Date.parse(header))) ms = Math.max(0, Date.parse(header) - now);
  }
  return ms === undefined ? undefined : Math.min(Math.ceil(ms), MAX_RETRY_AFTER_MS);
}

/** The provider's own words (`error.message` in both wire formats) rather than the SDK's envelope. */
function providerMessage(err: APICallError): string {
  try {
    const body = JSON.parse(err.responseBody ?? '') as { error?: { message?: unknown } | string; message?: unknown };
    const inner = typeof body.error === 'string' ? body.error : body.error?.message ?? body.message;
    if (typeof inner === 'string' && inner) return inner;
  } catch {
    // not JSON: fall through to the SDK's message
  }
  return err.message;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
