/**
 * Some endpoints answer a streaming request (`"stream": true`) with one JSON response. The AI SDK
 * would then fail to read a stream, so such an answer is turned into the stream it stands for: the
 * same text, tool calls, stop reason and usage, in one piece (no deltas, but nothing lost). OpenAI
 * chat completions and Anthropic Messages, told apart by the answer's shape.
 */

import { isRecord, type Json } from './stream-reading';

export function asksToStream(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    return (JSON.parse(body) as Json).stream === true;
  } catch {
    return false;
  }
}

export function openAiChunksOf(completion: Json): string[] {
  const { choices, usage, ...base } = completion;
  const choice = Array.isArray(choices) && isRecord(choices[0]) ? choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
  const delta = {
    role: 'assistant', content: typeof message.content === 'string' ? message.content : '',
    ...(calls.length ? { tool_calls: calls.map((c, index) => ({ index, id: c.id, type: 'function', function: c.function })) } : {}),
  };
  const chunk = (data: Json) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', ...data })}\n\n`;
  return [
    chunk({ choices: [{ index: 0, delta, finish_reason: choice.finish_reason === undefined ? 'stop' : choice.finish_reason }] }),
    ...(usage ? [chunk({ choices: [], usage })] : []),
    'data: [DONE]\n\n',
  ];
}

export function anthropicEventsOf(message: Json): string[] {
  const ev = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const { content, stop_reason: stopReason, stop_sequence: stopSequence, usage, ...rest } = message;
  const used = isRecord(usage) ? usage : {};
  const start = { ...rest, content: [], stop_reason: null, stop_sequence: null, usage: { ...used, output_tokens: 0 } };
  const out = [ev('message_start', { message: start })];
  (Array.isArray(content) ? content.filter(isRecord) : []).forEach((block, index) => {
    if (block.type === 'tool_use') {
      out.push(ev('content_block_start', { index, content_block: { ...block, input: {} } }));
      out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input ?? {}) } }));
    } else if (block.type === 'text') {
      out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: String(block.text ?? '') } }));
    } else {
      out.push(ev('content_block_start', { index, content_block: block }));
    }
    out.push(ev('content_block_stop', { index }));
  });
  out.push(ev('message_delta', {
    delta: { stop_reason: stopReason === undefined ? 'end_turn' : stopReason, stop_sequence: stopSequence ?? null },
    usage: { output_tokens: used.output_tokens ?? 0 },
  }));
  out.push(ev('message_stop', {}));
  return out;
}

/** A JSON answer (to a streaming request) as the event stream it stands for; any other response as it is. */
export async function jsonAnswerAsStream(response: Response): Promise<Response> {
  const type = response.headers.get('content-type') ?? '';
  if (!response.ok || !type.includes('application/json')) return response;
  const answer = await response.json() as unknown;
  if (!isRecord(answer)) return new Response(JSON.stringify(answer), { status: response.status, headers: response.headers });
  const events = answer.type === 'message' ? anthropicEventsOf(answer) : openAiChunksOf(answer);
  return new Response(events.join(''), { status: response.status, headers: { 'content-type': 'text/event-stream' } });
}
