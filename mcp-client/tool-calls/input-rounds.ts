import { isInputRequiredResult } from '@modelcontextprotocol/client';
import type {
  CallToolResult, Client, ElicitRequest, InputRequiredResult, InputResponses, RequestOptions,
} from '@modelcontextprotocol/client';
import { toolResultText } from '../../core/tool-texts';
import type { ElicitHandler } from '../connections/connect';

/**
 * A tool call on the 2026 era, where a server asks its questions by answering the call with
 * `input_required` (embedded requests and an opaque `requestState`) and the client calls again with
 * the answers. The engine drives these rounds itself (the client is in manual mode,
 * `inputRequired: {autoFulfill: false}`). With elicitation on, one round is one call
 * (callToolRound): its questions are stored and the workflow waits for their answers with no
 * activity running (activities/tools/durable-questions.ts). Without it, the rounds run here and
 * every question is declined (callToolInRounds). Anything but an elicitation ends the call. Every
 * round, its questions and the state it carries are bounded, since the server may be hostile. On
 * the 2025 era the call is a plain tools/call.
 */
export const MAX_INPUT_ROUNDS = 8;
export const MAX_INPUT_REQUESTS = 16;
export const MAX_REQUEST_STATE_BYTES = 64 * 1024;

export type RoundsOutcome = { result: CallToolResult } | { abandoned: string };

/** `_meta`: what every round of the call carries alike (the engine's idempotency key: core/tool-call-ids.ts) */
type CallParams = { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };

/** What the engine answers besides elicitation: sampling, for an integration that allows it. */
export interface RoundAnswers {
  sampling?: boolean;
}

/** Why this round's questions cannot be answered, if they cannot. */
export function refusal(asked: InputRequiredResult, answers: RoundAnswers = {}): string | undefined {
  const requests = Object.values(asked.inputRequests ?? {});
  if (requests.length > MAX_INPUT_REQUESTS || Buffer.byteLength(asked.requestState ?? '') > MAX_REQUEST_STATE_BYTES) {
    return toolResultText.mcpQuestionTooLarge();
  }
  const other = requests.find((r) => r.method !== 'elicitation/create' && !(answers.sampling && r.method === 'sampling/createMessage'));
  return other ? toolResultText.mcpQuestionUnsupported(String(other.method)) : undefined;
}

async function answers(asked: InputRequiredResult, elicit: ElicitHandler | undefined, signal: AbortSignal): Promise<InputResponses> {
  const responses: InputResponses = {};
  // One at a time: each may wait for a person, and their order is the server's.
  for (const [key, request] of Object.entries(asked.inputRequests ?? {})) {
    responses[key] = elicit ? await elicit(request.params as ElicitRequest['params'], signal) : { action: 'decline' };
  }
  return responses;
}

export type RoundOutcome = RoundsOutcome | { asked: InputRequiredResult };

/** What a retried call carries: the answers, keyed as the requests were, and the state echoed byte for byte. */
export interface RoundReply {
  inputResponses: InputResponses;
  requestState?: string;
}

/** One call of a 2026-era tool: its result, or the questions it asks (checked against the bounds). */
export async function callToolRound(
  client: Client, params: CallParams, options: RequestOptions, reply?: RoundReply, answers?: RoundAnswers,
): Promise<RoundOutcome> {
  // callTool, not a bare request: it mirrors the tool's x-mcp-header parameters into Mcp-Param-* headers.
  const value: unknown = await client.callTool(
    {
      ...params,
      ...(reply ? { inputResponses: reply.inputResponses } : {}),
      ...(reply?.requestState !== undefined ? { requestState: reply.requestState } : {}),
    } as CallParams,
    { ...options, allowInputRequired: true },
  );
  if (!isInputRequiredResult(value)) return { result: value as CallToolResult };
  const refused = refusal(value, answers);
  return refused ? { abandoned: refused } : { asked: value };
}

export async function callToolInRounds(
  client: Client, params: CallParams, options: RequestOptions, elicit?: ElicitHandler,
): Promise<RoundsOutcome> {
  if (client.getProtocolEra() !== 'modern') return { result: await client.callTool(params, options) as CallToolResult };
  const signal = options.signal ?? new AbortController().signal;
  let inputResponses: InputResponses | undefined;
  let requestState: string | undefined;
  for (let round = 0; ; round++) {
    // callTool, not a bare request: it mirrors the tool's x-mcp-header parameters into Mcp-Param-* headers.
    const value: unknown = await client.callTool(
      { ...params, ...(inputResponses ? { inputResponses } : {}), ...(requestState !== undefined ? { requestState } : {}) } as CallParams,
      { ...options, allowInputRequired: true },
    );
    if (!isInputRequiredResult(value)) return { result: value as CallToolResult };
    if (round >= MAX_INPUT_ROUNDS) return { abandoned: toolResultText.mcpTooManyRounds(MAX_INPUT_ROUNDS) };
    const refused = refusal(value);
    if (refused) return { abandoned: refused };
    inputResponses = await answers(value, elicit, signal);
    // Echoed byte for byte: the state is the server's, opaque to the client.
    requestState = value.requestState;
  }
}
