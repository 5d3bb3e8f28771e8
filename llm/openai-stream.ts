import { isRecord, type Json, type LiveSink, type StreamReading } from './stream-reading';
import { openAiChunksOf } from './json-as-stream';

interface CallSoFar { id?: unknown; type?: unknown; name?: string; args: string }

const optionalString = (v: unknown) => v === undefined || v === null || typeof v === 'string';

/** A chunk of the shape this reading knows (`choices[0].delta` with text and tool-call pieces); anything else goes to the provider package as it came. */
function knownChunk(chunk: unknown): chunk is Json & { choices?: Json[] } {
  if (!isRecord(chunk) || 'error' in chunk) return false;
  if (chunk.choices === undefined) return true;
  if (!Array.isArray(chunk.choices) || !chunk.choices.every(isRecord)) return false;
  const choice = chunk.choices[0];
  if (!choice) return true;
  if (!optionalString(choice.finish_reason)) return false;
  const delta = choice.delta ?? {};
  if (!isRecord(delta) || !optionalString(delta.content)) return false;
  if (delta.tool_calls === undefined || delta.tool_calls === null) return true;
  return Array.isArray(delta.tool_calls) && delta.tool_calls.every((c) => isRecord(c) && typeof c.index === 'number'
    && isRecord(c.function) && optionalString(c.function.name) && optionalString(c.function.arguments));
}

/**
 * An OpenAI chat completions event stream, read chunk by chunk: the text and the tool calls'
 * arguments go to the sink as they come, and the end is the whole completion as the short stream a
 * JSON answer would be (the first choice; reasoning is not kept, as the engine keeps none).
 */
export function openAiStreamReading(sink: LiveSink): StreamReading {
  let base: Json | undefined;
  let text = '';
  let finish: unknown;
  let usage: unknown;
  const calls: CallSoFar[] = [];
  const passed: string[] = [];
  return {
    event(data) {
      if (data === '[DONE]') return;
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        chunk = undefined;
      }
      if (!knownChunk(chunk)) return void passed.push(`data: ${data}\n\n`);
      const { choices, usage: used, ...rest } = chunk;
      base ??= rest;
      if (used !== undefined && used !== null) usage = used;
      const choice = choices?.[0];
      if (!choice) return;
      if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
      const delta = (choice.delta ?? {}) as { content?: string | null; tool_calls?: { index: number; id?: unknown; type?: unknown; function: { name?: string | null; arguments?: string | null } }[] | null };
      if (delta.content) {
        text += delta.content;
        sink.onText?.(delta.content);
      }
      for (const piece of delta.tool_calls ?? []) {
        const call = calls[piece.index] ??= { args: '' };
        if (piece.id !== undefined && piece.id !== null && call.id === undefined) call.id = piece.id;
        if (piece.type !== undefined && call.type === undefined) call.type = piece.type;
        if (piece.function.name) call.name = (call.name ?? '') + piece.function.name;
        if (piece.function.arguments) {
          call.args += piece.function.arguments;
          if (typeof call.id === 'string') sink.onToolInput?.(call.id, piece.function.arguments);
        }
      }
    },
    end() {
      const toolCalls = calls.filter(Boolean).map((c) => ({ id: c.id, type: c.type ?? 'function', function: { name: c.name, arguments: c.args } }));
      const message = { role: 'assistant', content: text, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
      const completion = { ...base, choices: [{ index: 0, message, finish_reason: finish ?? null }], ...(usage === undefined ? {} : { usage }) };
      return [...openAiChunksOf(completion).slice(0, -1), ...passed, 'data: [DONE]\n\n'];
    },
  };
}
