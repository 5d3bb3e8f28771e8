import { anthropicEventsOf } from './json-as-stream';
import { isRecord, type Json, type LiveSink, type StreamReading } from './stream-reading';

/**
 * An Anthropic Messages event stream, read event by event: the text and the tool calls' input go
 * to the sink as they come, and the end is the whole message as the short stream a JSON answer
 * would be. A tool call's input is kept as the JSON text that came (the provider package parses
 * it, as it would have); a thinking block keeps its text and signature.
 */
export function anthropicStreamReading(sink: LiveSink): StreamReading {
  let message: Json = {};
  let usage: Json = {};
  let stop: Json = {};
  const blocks: Json[] = [];
  const passed: string[] = [];

  /** false: not of the shape this reading knows, and passed on as it came */
  const read = (ev: Json): boolean => {
    switch (ev.type) {
      case 'message_start':
        if (!isRecord(ev.message)) return false;
        message = ev.message;
        usage = isRecord(ev.message.usage) ? { ...ev.message.usage } : {};
        return true;
      case 'content_block_start': {
        if (typeof ev.index !== 'number' || !isRecord(ev.content_block)) return false;
        const block = { ...ev.content_block };
        if (block.type === 'tool_use') block.input = '';
        if (block.type === 'text' && typeof block.text !== 'string') block.text = '';
        blocks[ev.index] = block;
        return true;
      }
      case 'content_block_delta': {
        const block = typeof ev.index === 'number' ? blocks[ev.index] : undefined;
        const delta = ev.delta;
        if (!block || !isRecord(delta)) return false;
        if (delta.type === 'text_delta' && typeof delta.text === 'string' && block.type === 'text') {
          block.text = `${block.text as string}${delta.text}`;
          if (delta.text) sink.onText?.(delta.text);
        } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string' && block.type === 'tool_use') {
          block.input = `${block.input as string}${delta.partial_json}`;
          if (delta.partial_json && typeof block.id === 'string') sink.onToolInput?.(block.id, delta.partial_json);
        } else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') {
          block.thinking = `${typeof block.thinking === 'string' ? block.thinking : ''}${delta.thinking}`;
        } else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') {
          block.signature = delta.signature;
        } else if (delta.type !== 'citations_delta') return false;
        return true;
      }
      case 'message_delta':
        if (isRecord(ev.delta)) stop = ev.delta;
        if (isRecord(ev.usage)) usage = { ...usage, ...ev.usage };
        return true;
      case 'content_block_stop': case 'message_stop': case 'ping':
        return true;
      default:
        return false;
    }
  };

  return {
    event(data, name) {
      let ev: unknown;
      try {
        ev = JSON.parse(data);
      } catch {
        ev = undefined;
      }
      if (!isRecord(ev) || !read(ev)) passed.push(`${name ? `event: ${name}\n` : ''}data: ${data}\n\n`);
    },
    end() {
      const whole = { ...message, content: blocks.filter(Boolean), stop_reason: stop.stop_reason ?? null, stop_sequence: stop.stop_sequence ?? null, usage };
      const events = anthropicEventsOf(whole);
      // what was not understood goes before the end, where the provider package reads it as it would have
      return [...events.slice(0, -1), ...passed, ...events.slice(-1)];
    },
  };
}
