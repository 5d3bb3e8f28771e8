import { anthropicEventsOf } from './json-as-stream';
import { isRecord, type Json, type LiveSink, type StreamReading } from './stream-reading';
import type { AnswerMeter } from './answer-bounds';

/** One delta added to its block, counted first; false: not of a shape this reading knows. */
function addDelta(block: Json, index: number, delta: Json, sink: LiveSink, meter: AnswerMeter): boolean {
  if (delta.type === 'text_delta' && typeof delta.text === 'string' && block.type === 'text') {
    meter.text(delta.text);
    block.text = `${block.text as string}${delta.text}`;
    if (delta.text) sink.onText?.(delta.text);
  } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string' && block.type === 'tool_use') {
    meter.toolArguments(index, delta.partial_json);
    block.input = `${block.input as string}${delta.partial_json}`;
    if (delta.partial_json && typeof block.id === 'string') sink.onToolInput?.(block.id, delta.partial_json);
  } else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') {
    meter.kept(delta.thinking);
    block.thinking = `${typeof block.thinking === 'string' ? block.thinking : ''}${delta.thinking}`;
  } else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') {
    meter.kept(delta.signature);
    block.signature = delta.signature;
  } else if (delta.type !== 'citations_delta') return false;
  return true;
}

/**
 * An Anthropic Messages event stream, read event by event: the text and the tool calls' input go
 * to the sink as they come, and the end is the whole message as the short stream a JSON answer
 * would be. A tool call's input is kept as the JSON text that came (the provider package parses
 * it, as it would have); a thinking block keeps its text and signature. What it keeps is counted
 * by the meter first, which ends the reading past the answer's bounds.
 */
export function anthropicStreamReading(sink: LiveSink, meter: AnswerMeter): StreamReading {
  return new AnthropicReading(sink, meter);
}

class AnthropicReading implements StreamReading {
  private message: Json = {};
  private usage: Json = {};
  private stop: Json = {};
  // by index: the model numbers them, and a number far off must not make a sparse array to walk
  private readonly blocks = new Map<number, Json>();
  private readonly passed: string[] = [];

  constructor(private readonly sink: LiveSink, private readonly meter: AnswerMeter) {}

  event(data: string, name?: string): void {
    let ev: unknown;
    try {
      ev = JSON.parse(data);
    } catch {
      ev = undefined;
    }
    if (isRecord(ev) && this.read(ev, data)) return;
    this.meter.kept(data);
    this.passed.push(`${name ? `event: ${name}\n` : ''}data: ${data}\n\n`);
  }

  end(): string[] {
    const { stop } = this;
    const content = [...this.blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
    const whole = {
      ...this.message, content, stop_reason: stop.stop_reason ?? null, stop_sequence: stop.stop_sequence ?? null, usage: this.usage,
    };
    const events = anthropicEventsOf(whole);
    // what was not understood goes before the end, where the provider package reads it as it would have
    return [...events.slice(0, -1), ...this.passed, ...events.slice(-1)];
  }

  /** false: not of the shape this reading knows, and passed on as it came */
  private read(ev: Json, data: string): boolean {
    switch (ev.type) {
      case 'message_start':
        return this.messageStarted(ev, data);
      case 'content_block_start':
        return this.blockStarted(ev, data);
      case 'content_block_delta': {
        const block = typeof ev.index === 'number' ? this.blocks.get(ev.index) : undefined;
        return Boolean(block) && isRecord(ev.delta) && addDelta(block!, ev.index as number, ev.delta, this.sink, this.meter);
      }
      case 'message_delta':
        // its usage is merged into what came before: counted, or an endless run of new keys would grow it
        this.meter.kept(data);
        if (isRecord(ev.delta)) this.stop = ev.delta;
        if (isRecord(ev.usage)) this.usage = { ...this.usage, ...ev.usage };
        return true;
      case 'content_block_stop': case 'message_stop': case 'ping':
        return true;
      default:
        return false;
    }
  }

  private messageStarted(ev: Json, data: string): boolean {
    if (!isRecord(ev.message)) return false;
    this.meter.kept(data);
    this.message = ev.message;
    this.usage = isRecord(ev.message.usage) ? { ...ev.message.usage } : {};
    return true;
  }

  private blockStarted(ev: Json, data: string): boolean {
    if (typeof ev.index !== 'number' || !isRecord(ev.content_block)) return false;
    const block = { ...ev.content_block };
    if (block.type === 'tool_use' && !this.blocks.has(ev.index)) this.meter.call(ev.index);
    this.meter.kept(data);
    if (block.type === 'tool_use') block.input = '';
    if (block.type === 'text' && typeof block.text !== 'string') block.text = '';
    this.blocks.set(ev.index, block);
    return true;
  }
}
