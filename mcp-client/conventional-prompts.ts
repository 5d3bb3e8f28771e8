/**
 * Conventional MCP prompts (contract: docs/tools.md, "Conventional prompts").
 * Pure: which prompt names are conventional, and how fetched prompts become the injected prefix.
 */
import type { ChatMessage, ToolCall } from '../core/messages';
import type { PrefixSource } from '../core/context-preview';
import { isPlainObject } from '../core/plain-object';

export type ConventionalKind =
  | 'system_prompt' | 'tool_instructions' | 'user_prompt' | 'assistant_prompt' | 'tool_call' | 'tool_result';

export interface ConventionalName {
  kind: ConventionalKind;
  /** the `<id>` of tool_call:<id> / tool_result:<id> / tool_answer:<id>, as written */
  id?: string;
}

const PLAIN: Record<string, ConventionalKind> = {
  system_prompt: 'system_prompt',
  tool_instructions: 'tool_instructions',
  user_prompt: 'user_prompt',
  assistant_prompt: 'assistant_prompt',
};

/** Case-insensitive; anything else is not conventional and is never injected. */
export function detectConventionalPrompt(name: string): ConventionalName | null {
  const trimmed = name.trim();
  const lower = trimmed.toLowerCase();
  if (PLAIN[lower]) return { kind: PLAIN[lower] };
  const colon = lower.indexOf(':');
  if (colon < 0) return null;
  const id = trimmed.slice(colon + 1).trim();
  if (!id) return null;
  const prefix = lower.slice(0, colon);
  if (prefix === 'tool_call') return { kind: 'tool_call', id };
  if (prefix === 'tool_result' || prefix === 'tool_answer') return { kind: 'tool_result', id };
  return null;
}

/**
 * Whether an agent's promptWhen condition (core/prompt-conditions.ts) may leave the prompt out:
 * every conventional prompt but `system_prompt`, the operator's, which is always injected.
 */
export const isOptionalPrompt = (name: string): boolean => detectConventionalPrompt(name)?.kind !== 'system_prompt';

/** One conventional prompt after prompts/get, in integration order, then in the server's listing order. */
export interface FetchedPrompt {
  integrationId: string;
  serverName: string;
  name: string;
  content: string;
}

export interface DroppedPrompt {
  integrationId: string;
  name: string;
  reason: string;
}

/** Providers accept tool-call ids and names of [A-Za-z0-9_-], up to 64 characters. */
export function sanitiseToolId(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'call';
}


/** JSON `{function|name, args|arguments}` names the call; anything else is the assistant's text. */
export function parseToolCallContent(content: string, id: string): { text: string; name: string; arguments: Record<string, unknown> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    parsed = undefined;
  }
  if (isPlainObject(parsed)) {
    const name = parsed.function ?? parsed.name;
    if (typeof name === 'string' && name.trim()) {
      let args = parsed.args ?? parsed.arguments ?? {};
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          args = {};
        }
      }
      return { text: '', name: sanitiseToolId(name.trim()), arguments: isPlainObject(args) ? args : {} };
    }
  }
  return { text: content, name: id, arguments: {} };
}

/** Keeps tool-call ids unique across servers: two servers may both expose tool_call:example. */
function uniqueId(base: string, used: Set<string>): string {
  let id = base;
  for (let n = 2; used.has(id); n++) {
    const suffix = `_${n}`;
    id = base.slice(0, 64 - suffix.length) + suffix;
  }
  used.add(id);
  return id;
}

/** A prefix message and what it was made of. */
interface Sourced {
  message: ChatMessage;
  sources: PrefixSource[];
}

const sourceOf = (p: FetchedPrompt): PrefixSource =>
  ({ kind: 'prompt', integrationId: p.integrationId, integrationName: p.serverName, prompt: p.name });

function toolPairs(prompts: FetchedPrompt[], dropped: DroppedPrompt[]): Sourced[] {
  const messages: Sourced[] = [];
  const used = new Set<string>();
  const servers = [...new Set(prompts.map((p) => p.integrationId))];
  for (const integrationId of servers) {
    // Calls and results pair within one server, by id, case-insensitively like the names.
    const calls = new Map<string, { prompt: FetchedPrompt; id: string }>();
    const results = new Map<string, FetchedPrompt>();
    for (const p of prompts.filter((q) => q.integrationId === integrationId)) {
      const name = detectConventionalPrompt(p.name);
      if (!name?.id) continue;
      const key = name.id.toLowerCase();
      const target = name.kind === 'tool_call' ? calls : name.kind === 'tool_result' ? results : undefined;
      if (!target) continue;
      if (target.has(key)) {
        dropped.push({ integrationId, name: p.name, reason: `another ${name.kind} with the id ${name.id} came first` });
        continue;
      }
      if (name.kind === 'tool_call') calls.set(key, { prompt: p, id: name.id });
      else results.set(key, p);
    }
    for (const [key, { prompt, id }] of calls) {
      const result = results.get(key);
      if (!result) {
        dropped.push({ integrationId, name: prompt.name, reason: 'a tool_call without a tool_result' });
        continue;
      }
      results.delete(key);
      const callId = uniqueId(sanitiseToolId(id), used);
      const call = parseToolCallContent(prompt.content, sanitiseToolId(id));
      const toolCall: ToolCall = { id: callId, name: call.name, arguments: call.arguments };
      messages.push({ message: { role: 'assistant', content: call.text, toolCalls: [toolCall] }, sources: [sourceOf(prompt)] });
      const toolMessage: ChatMessage = { role: 'tool', toolCallId: callId, name: call.name, content: result.content };
      messages.push({ message: toolMessage, sources: [sourceOf(result)] });
    }
    for (const result of results.values()) {
      dropped.push({ integrationId, name: result.name, reason: 'a tool_result without a tool_call' });
    }
  }
  return messages;
}

/** What joins the parts of the prefix's system message. */
export const SYSTEM_PART_SEPARATOR = '\n\n---\n\n';
/** What comes before the agent's instructions in a system message that has servers' parts. */
export const INSTRUCTIONS_HEADER = '[Thread System Prompt]\n';
/** How a server's system_prompt and tool_instructions parts begin. */
export const serverPartHeader = (kind: 'System' | 'Tool', serverName: string) => `[${kind} instructions from Server: ${serverName}]\n`;

/**
 * The injected prefix, in the contract's order: one system message (servers' system_prompt,
 * then tool_instructions, then the agent's instructions), user_prompt messages, tool_call and
 * tool_result pairs, then assistant_prompt messages. `sources[i]` says what `messages[i]` was made of.
 */
export function buildInjectedMessages(prompts: FetchedPrompt[], instructions: string | null): {
  messages: ChatMessage[]; sources: PrefixSource[][]; dropped: DroppedPrompt[];
} {
  const dropped: DroppedPrompt[] = [];
  const ofKind = (kind: ConventionalKind) => prompts.filter((p) => detectConventionalPrompt(p.name)?.kind === kind);
  const systemPrompts = [...ofKind('system_prompt'), ...ofKind('tool_instructions')];
  const header = (p: FetchedPrompt) => (detectConventionalPrompt(p.name)?.kind === 'system_prompt' ? 'System' : 'Tool');
  const systemParts = systemPrompts.map((p) => `${serverPartHeader(header(p), p.serverName)}${p.content}`);
  const sourced: Sourced[] = [];
  if (systemParts.length > 0) {
    const parts = instructions ? [...systemParts, `${INSTRUCTIONS_HEADER}${instructions}`] : systemParts;
    const sources: PrefixSource[] = systemPrompts.map(sourceOf);
    if (instructions) sources.push({ kind: 'instructions' });
    sourced.push({ message: { role: 'system', content: parts.join(SYSTEM_PART_SEPARATOR) }, sources });
  } else if (instructions) {
    sourced.push({ message: { role: 'system', content: instructions }, sources: [{ kind: 'instructions' }] });
  }
  for (const p of ofKind('user_prompt')) sourced.push({ message: { role: 'user', content: p.content }, sources: [sourceOf(p)] });
  sourced.push(...toolPairs(prompts, dropped));
  for (const p of ofKind('assistant_prompt')) sourced.push({ message: { role: 'assistant', content: p.content }, sources: [sourceOf(p)] });
  return { messages: sourced.map((s) => s.message), sources: sourced.map((s) => s.sources), dropped };
}
