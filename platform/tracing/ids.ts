import { createHash } from 'node:crypto';
import { TraceFlags, type SpanContext } from '@opentelemetry/api';
import { RandomIdGenerator, type IdGenerator } from '@opentelemetry/sdk-trace-base';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A run's trace id, derived from its run id: every activity of the run, on any worker and after
 * any retry or continue-as-new, lands in the same trace without carrying ids through history.
 */
export const traceIdForRun = (runId: string) => sha256(runId).slice(0, 32);
/** The id of the run's root span, which finishRun emits; the turns and tool calls are its children. */
export const rootSpanIdForRun = (runId: string) => sha256(`${runId}/run`).slice(0, 16);

export function runParentContext(runId: string): SpanContext {
  return { traceId: traceIdForRun(runId), spanId: rootSpanIdForRun(runId), traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

let pinned: { traceId: string; spanId: string } | undefined;

/**
 * Random ids, except inside `withPinnedIds`. OpenTelemetry picks span ids itself; the run's root span
 * needs the derived one, because its children were emitted earlier, by other activities.
 */
export class RunIdGenerator implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  generateTraceId(): string {
    return pinned?.traceId ?? this.random.generateTraceId();
  }
  generateSpanId(): string {
    return pinned?.spanId ?? this.random.generateSpanId();
  }
}

/** Span creation is synchronous, so pinning around it cannot leak into another span. */
export function withPinnedIds<T>(ids: { traceId: string; spanId: string }, create: () => T): T {
  pinned = ids;
  try {
    return create();
  } finally {
    pinned = undefined;
  }
}
