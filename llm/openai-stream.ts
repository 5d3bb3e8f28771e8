import { isRecord, type Json, type LiveSink, type StreamReading } from './stream-reading';
import { openAiChunksOf } from './json-as-stream';
import type { AnswerMeter } from './answer-bounds';

interface CallSoFar { id?: unknown; type?: unknown; name?: string; args: string }

const optionalString = (v: unknown) => v === undefined || v === null || typeof v === 'string';

/**
 * A chunk of the shape this reading knows (`choices[0].delta` with text and tool-call pieces);
 * anything else goes to the provider package as it came.
 */
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

type ToolCallPiece = { index: number; id?: unknown; type?: unknown; function: { name?: string | null; arguments?: string | null } };

/**
 * The answer's tool calls as their pieces come, by index (the model numbers them, and a number far
 * off must not make a sparse array to walk), each piece counted by the meter before it is kept.
 */
function toolCallsSoFar(sink: LiveSink, meter: AnswerMeter) {
  const calls = new Map<number, CallSoFar>();
  const callAt = (index: number): CallSoFar => {
    let call = calls.get(index);
    if (!call) {
      meter.call(index);
      calls.set(index, (call = { args: '' }));
    }
    return call;
  };
  return {
    add(piece: ToolCallPiece): void {
      const call = callAt(piece.index);
      if (piece.id !== undefined && piece.id !== null && call.id === undefined) {
        meter.kept(JSON.stringify(piece.id));
        call.id = piece.id;
      }
      if (piece.type !== undefined && call.type === undefined) {
        meter.kept(JSON.stringify(piece.type) ?? '');
        call.type = piece.type;
      }
      if (piece.function.name) {
        meter.kept(piece.function.name);
        call.name = (call.name ?? '') + piece.function.name;
      }
      if (piece.function.arguments) {
        meter.toolArguments(piece.index, piece.function.arguments);
        call.args += piece.function.arguments;
        if (typeof call.id === 'string') sink.onToolInput?.(call.id, piece.function.arguments);
      }
    },
    /** in the model's order, as a completion's message lists them */
    whole: () => [...calls.entries()].sort(([a], [b]) => a - b)
      .map(([, c]) => ({ id: c.id, type: c.type ?? 'function', function: { name: c.name, arguments: c.args } })),
  };
}

/**
 * An OpenAI chat completions event stream, read chunk by chunk: the text and the tool calls'
 * arguments go to the sink as they come, and the end is the whole completion as the short stream a
 * JSON answer would be (the first choice; reasoning is not kept, as the engine keeps none). What
 * it keeps is counted by the meter first, which ends the reading past the answer's bounds.
 */
export function openAiStreamReading(sink: LiveSink, meter: AnswerMeter): StreamReading {
  let base: Json | undefined;
  let text = '';
  let finish: unknown;
  let usage: unknown;
  const calls = toolCallsSoFar(sink, meter);
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
      if (!knownChunk(chunk)) {
        meter.kept(data);
        return void passed.push(`data: ${data}\n\n`);
      }
      const { choices, usage: used, ...rest } = chunk;
      if (!base) meter.kept(data);
      base ??= rest;
      if (used !== undefined && used !== null) usage = used;
      const choice = choices?.[0];
      if (!choice) return;
      if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
      const delta = (choice.delta ?? {}) as { content?: string | null; tool_calls?: ToolCallPiece[] | null };
      if (delta.content) {
        meter.text(delta.content);
        text += delta.content;
        sink.onText?.(delta.content);
      }
      for (const piece of delta.tool_calls ?? []) calls.add(piece);
    },
    end() {
      const toolCalls = calls.whole();
      const message = { role: 'assistant', content: text, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
      const completion = {
        ...base, choices: [{ index: 0, message, finish_reason: finish ?? null }], ...(usage === undefined ? {} : { usage }),
      };
      return [...openAiChunksOf(completion).slice(0, -1), ...passed, 'data: [DONE]\n\n'];
    },
  };
}
