import type { ChatMessage, ToolCall } from './messages';

/**
 * Tool-call ids are unique within a run, so that `<runId>/<toolCallId>` names one call: the
 * idempotency key every MCP `tools/call` of the engine carries in its `_meta`, the same on every
 * retry of the call, after a crash and across a 2026-era call's input rounds (docs/integrations.md).
 * Pure: the LLM turn's activity renames, before the reply is stored.
 */

/** The `_meta` key of the idempotency key. */
export const IDEMPOTENCY_KEY_META = 'io.github.durable-agent-engine/idempotency-key';

export const idempotencyKey = (runId: string, toolCallId: string): string => `${runId}/${toolCallId}`;

/** What a tools/call's `_meta` carries for the call `toolCallId` of the run. */
export const idempotencyMeta = (runId: string, toolCallId: string): Record<string, string> =>
  ({ [IDEMPOTENCY_KEY_META]: idempotencyKey(runId, toolCallId) });

/**
 * Providers accept ids of [A-Za-z0-9_-] up to 64 characters (Anthropic refuses others), so a
 * renamed id keeps to them: `call_1` repeated in turn 2 becomes `call_1-t2`, then `call_1-t2-2`, ….
 */
const MAX_RENAMED_ID = 64;

function freshId(id: string, used: ReadonlySet<string>, turn: number): string {
  if (!used.has(id)) return id;
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? `-t${turn}` : `-t${turn}-${n}`;
    const room = MAX_RENAMED_ID - suffix.length;
    const candidate = (id.length > room ? id.slice(0, room) : id) + suffix;
    if (!used.has(candidate)) return candidate;
  }
}

/** The ids of the calls in a run's messages (its stored replies). */
export function toolCallIdsOf(messages: ChatMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.toolCalls ?? []) ids.add(c.id);
  return ids;
}

/**
 * A turn's calls under ids unique within the run: a provider's id that repeats one of `earlier`
 * (the run's calls of earlier turns), or one of this reply's, is renamed. OpenAI-compatible
 * servers repeat `call_1` turn after turn. Deterministic: a retried turn names the same calls alike.
 */
export function uniqueToolCalls(calls: ToolCall[], earlier: ReadonlySet<string>, turn: number): ToolCall[] {
  const used = new Set(earlier);
  return calls.map((call) => {
    const id = freshId(call.id, used, turn);
    used.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

/**
 * The id a call's streamed input goes under while the reply is written: as uniqueToolCalls will
 * name it, for the calls whose provider id repeats one of an earlier turn (in the reply's order).
 */
export function streamedToolCallIds(earlier: ReadonlySet<string>, turn: number): (providerId: string) => string {
  const used = new Set(earlier);
  const named = new Map<string, string>();
  return (providerId) => {
    let id = named.get(providerId);
    if (id === undefined) {
      id = freshId(providerId, used, turn);
      used.add(id);
      named.set(providerId, id);
    }
    return id;
  };
}
