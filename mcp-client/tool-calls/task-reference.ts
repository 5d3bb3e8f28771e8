import type { CallToolResult } from '@modelcontextprotocol/client';
import type { SerializedTaskReference } from '@modelcontextprotocol/ext-tasks/client' with { 'resolution-mode': 'import' };

/**
 * What a task-backed tool call keeps between polls, and the bounds on what a server sends about
 * its tasks. A reference is stored in workflow history, so it is small and plain JSON; it is read
 * back from there (or from anywhere else) as untrusted text.
 */

/** The bound on a serialized reference: most of it is the server's task id. */
export const MAX_REFERENCE_BYTES = 8 * 1024;
/** The bounds a server's suggested poll interval is held to: no busy polling, no day-long waits. */
export const MIN_POLL_MS = 1_000;
export const MAX_POLL_MS = 60_000;
/** The bound on a status message or failure text kept from a server. */
export const MAX_MESSAGE_CHARS = 1_000;

export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** A reference that is not one this code wrote, or one for another server. */
export class TaskReferenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TaskReferenceError';
  }
}

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

export function encodeReference(reference: SerializedTaskReference): string {
  const text = JSON.stringify({
    endpointId: reference.endpointId,
    generation: reference.generation,
    taskId: reference.taskId,
    originalOperation: reference.originalOperation,
  });
  if (utf8Bytes(text) > MAX_REFERENCE_BYTES) {
    throw new TaskReferenceError(`task reference exceeds ${MAX_REFERENCE_BYTES} bytes (the server's task id is too long)`);
  }
  return text;
}

/** The reference `text` holds, if it is one for `endpointId`; a clear TaskReferenceError otherwise. */
export function decodeReference(text: unknown, endpointId: string): SerializedTaskReference {
  if (typeof text !== 'string') throw new TaskReferenceError('task reference is not a string');
  if (utf8Bytes(text) > MAX_REFERENCE_BYTES) throw new TaskReferenceError(`task reference exceeds ${MAX_REFERENCE_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TaskReferenceError('task reference is not JSON');
  }
  const r = (value && typeof value === 'object' && !Array.isArray(value) ? value : {}) as Record<string, unknown>;
  const wellFormed = Object.keys(r).length === 4 && typeof r.endpointId === 'string' && typeof r.taskId === 'string' && r.taskId !== ''
    && (r.generation === 'v1' || r.generation === 'v2') && r.originalOperation === 'tools/call';
  if (!wellFormed) throw new TaskReferenceError('task reference is not a tool-call task reference');
  if (r.endpointId !== endpointId) throw new TaskReferenceError('task reference belongs to another MCP server');
  return r as unknown as SerializedTaskReference;
}

/** A server's suggested poll interval, held to MIN_POLL_MS..MAX_POLL_MS; none when it gave no usable one. */
export function pollInterval(suggested: unknown): number | undefined {
  if (typeof suggested !== 'number' || !Number.isFinite(suggested)) return undefined;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, Math.round(suggested)));
}

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && (TASK_STATUSES as readonly string[]).includes(value);
}

export function boundedMessage(text: unknown, fallback: string): string {
  const message = typeof text === 'string' && text.trim() !== '' ? text : fallback;
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message;
}

/** `value` as JSON if it is at most `maxBytes` long; undefined past that (or when it is not JSON). */
export function withinBytes(value: unknown, maxBytes: number): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined;
  }
  return text !== undefined && utf8Bytes(text) <= maxBytes ? text : undefined;
}

export const tooLargeText = (maxBytes: number) => `result exceeds ${maxBytes} bytes`;

/** A tool result as the engine reads it: ext-tasks has already checked it against its era's schema. */
export function asCallToolResult(value: unknown): CallToolResult {
  const result = value as CallToolResult & { resultType?: unknown };
  if (!result || typeof result !== 'object' || !Array.isArray(result.content)) {
    throw new Error('the MCP server\'s task result is not a tool result');
  }
  // The 2026 era marks a final result `resultType: "complete"`; what the engine keeps is the result.
  const { resultType: _resultType, ...rest } = result;
  return rest;
}
