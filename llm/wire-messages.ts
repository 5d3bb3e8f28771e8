import { jsonSchema, tool, type ModelMessage, type ToolSet } from 'ai';
import type { ChatMessage, ToolCall, ToolDefinition } from '../core/messages';

/**
 * Our provider-neutral messages → the AI SDK's ModelMessage, which each provider package then
 * renders in its own wire format (OpenAI `tool_calls`/`role: tool`, Anthropic `tool_use`/`tool_result`).
 */
export function toModelMessages(messages: ChatMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'user') {
      out.push({ role: m.role, content: m.content });
    } else if (m.role === 'assistant') {
      const calls = m.toolCalls ?? [];
      // Anthropic refuses empty text blocks, and an assistant message with nothing in it says nothing.
      if (!m.content && calls.length === 0) continue;
      out.push({
        role: 'assistant',
        content: [
          ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
          ...calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: c.arguments ?? {} })),
        ],
      });
    } else {
      const part = {
        type: 'tool-result' as const, toolCallId: m.toolCallId, toolName: m.name, output: { type: 'text' as const, value: m.content },
      };
      // The results of one turn's parallel calls travel together: Anthropic needs them in one user turn.
      const last = out[out.length - 1];
      if (last?.role === 'tool') last.content.push(part);
      else out.push({ role: 'tool', content: [part] });
    }
  }
  return out;
}

/** Tool definitions without `execute`: the SDK reports the calls and our workflow runs them as activities. */
export function toToolSet(tools: ToolDefinition[]): ToolSet {
  const set: ToolSet = {};
  for (const t of tools) {
    set[t.name] = tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]) });
  }
  return set;
}

interface SdkToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/**
 * The SDK's tool calls → ours. Calls to unknown tools or with unparsable arguments are kept:
 * the workflow answers them with the contract texts, so the LLM can correct itself.
 */
export function fromSdkToolCalls(calls: SdkToolCall[]): ToolCall[] {
  return calls.map((c) => ({ id: c.toolCallId, name: c.toolName, arguments: toArguments(c.input) }));
}

function toArguments(input: unknown): Record<string, unknown> {
  if (typeof input === 'string') {
    try {
      return toArguments(JSON.parse(input));
    } catch {
      return {};
    }
  }
  return typeof input === 'object' && input !== null && !Array.isArray(input) ? input as Record<string, unknown> : {};
}
