import type { Queryable } from '../../store/pool';
import { listEvents, type RunEvent } from '../../store/runs/events';
import type { SamplingRecord } from '../../store/runs/samplings';
import type { PendingInputView } from '../../core/run-view';
import type { Usage } from '../../core/messages';
import { EventCursor } from './event-cursor';
import type { SamplingStatus } from '../../core/sampling';
import type { DecidedBy } from '../../core/approval';

/** The numbered events of a run's log, as followers are given them. */
export type { RunEvent };

/**
 * Following a run's event log (run_events) as it grows.
 *
 * Sequence numbers are allocated by the workflow but written by activities, and the tool calls of
 * one turn run in parallel: the second call's events can be written before the first call's
 * `tool_call_ended`. Each event is delivered as soon as it is written, whatever its number, and
 * carries the follower's cursor (event-cursor.ts: the numbers delivered so far), which a follower
 * resuming gives back so that it misses and repeats nothing. A gap is settled by the next
 * `turn_started` or `run_ended`: everything below one was written by activities that finished
 * before that event's writer was scheduled, so a gap below it will never fill (a step retried after
 * a crash may skip an event it had already half-written). Past the cursor's bound (32 runs of
 * numbers ahead of a gap) further events wait for the gap, as all did before.
 */

const BARRIERS: ReadonlySet<RunEvent['type']> = new Set(['run_started', 'turn_started', 'run_ended']);

/**
 * An event must read the same live and replayed, but `run_started` is completed after it is
 * written: the prompt-prefix step merges `prefix` (its size) into it. It is held back until it
 * carries `prefix` or a later event exists (the run went on, or ended before building a prefix).
 */
function isComplete(e: RunEvent, events: RunEvent[]): boolean {
  if (e.type !== 'run_started' || 'prefix' in e.data) return true;
  return events.some((later) => later.seq > e.seq);
}

/** An event delivered, with the cursor that includes it (its SSE id). */
export interface DeliveredEvent {
  event: RunEvent;
  cursor: string;
}

/** The events not yet in `cursor` that can be delivered now, in seq order; the cursor takes them in. */
export function releasable(events: RunEvent[], cursor: EventCursor): DeliveredEvent[] {
  const fresh = events.filter((e) => !cursor.has(e.seq)).sort((a, b) => a.seq - b.seq);
  const settledUpTo = Math.max(cursor.upTo, ...fresh.filter((e) => BARRIERS.has(e.type)).map((e) => e.seq));
  const out: DeliveredEvent[] = [];
  for (const e of fresh) {
    if (!isComplete(e, events)) break;
    if (e.seq > settledUpTo && !cursor.canHold(e.seq)) continue;
    cursor.add(e.seq);
    if (BARRIERS.has(e.type)) cursor.settle(e.seq);
    out.push({ event: e, cursor: cursor.toString() });
  }
  return out;
}

/** Where a run stands, as far as a follower needs to know. */
export type RunProgress = 'running' | 'ended' | 'closed_without_result';

export interface FollowOptions {
  /** what the follower has had already (a resumed stream's Last-Event-ID); taken in as events are delivered */
  after: EventCursor;
  /**
   * Resolves when the run may have changed: a notification from PostgreSQL (store/runs/change-feed.ts),
   * or a poll interval for a caller without a listener. Must resolve once `signal` aborts.
   */
  changed: () => Promise<void>;
  /** how often, while no event arrives, the run's progress is checked (a terminated workflow writes no run_ended) */
  progressCheckMs: number;
  progress: () => Promise<RunProgress>;
  /** stops following: the client went away or the server is closing */
  signal: AbortSignal;
  /**
   * the run's questions waiting for answers (MCP elicitation), read on every wake: each is yielded
   * once per follower, beside the numbered events (they have no seq: a resumed stream sees the
   * questions still waiting again)
   */
  pendingInputs?: () => Promise<PendingInputView[]>;
  /** the run's MCP sampling requests still open or resolved since the stream began, read on every wake like pendingInputs */
  samplings?: () => Promise<SamplingView[]>;
  /** the approvals its running sub-agent runs wait for (each with the run that waits), read on every wake like pendingInputs */
  childApprovals?: () => Promise<ChildApproval[]>;
}

/** A sub-agent run's pending approval, as its parent's followers see it. */
export type ChildApproval = { runId: string; toolCallId: string } & Record<string, unknown>;

/** A sampling request as followers see it: never its messages or the answer. */
export interface SamplingView {
  samplingId: string;
  toolCallId: string;
  turn: number;
  name: string;
  integrationId: string | null;
  needsApproval: boolean;
  status: SamplingStatus;
  usage: Usage | null;
  /** the reviewer who decided (sampling `approve`); null while it waits, when nobody decided, and for decisions through /mcp */
  decidedBy: DecidedBy | null;
  /** what the model would get, shown while a reviewer must decide */
  request?: SamplingRecord['request'];
}

const OPEN: ReadonlySet<SamplingStatus> = new Set(['pending', 'approved']);

export const samplingView = (s: SamplingRecord): SamplingView => ({
  samplingId: s.samplingId, toolCallId: s.toolCallId, turn: s.turn, name: s.name, integrationId: s.integrationId,
  needsApproval: s.needsApproval, status: s.status, usage: s.usage, decidedBy: s.decidedBy,
  ...(s.needsApproval && s.status === 'pending' ? { request: s.request } : {}),
});

export type FollowItem =
  | { kind: 'event'; event: RunEvent; cursor: string }
  | { kind: 'closed_without_result' }
  | { kind: 'input_requested'; input: PendingInputView }
  /** a question announced to this follower no longer waits: answered, expired, or its call ended */
  | { kind: 'input_resolved'; inputId: string }
  | { kind: 'sampling_requested'; sampling: SamplingView }
  | { kind: 'sampling_resolved'; sampling: SamplingView }
  /** a sub-agent run's approval, announced once while it waits, then once when it no longer does */
  | { kind: 'child_approval_requested'; approval: ChildApproval }
  | { kind: 'child_approval_resolved'; runId: string; toolCallId: string };

/** Each sampling request once as requested (even one already resolved when first seen), then once as resolved. */
function samplingFollower() {
  const requested = new Set<string>();
  const resolved = new Set<string>();
  return {
    news(views: SamplingView[]): FollowItem[] {
      const items: FollowItem[] = [];
      for (const sampling of views) {
        if (!requested.has(sampling.samplingId)) {
          requested.add(sampling.samplingId);
          items.push({ kind: 'sampling_requested', sampling });
        }
        if (!OPEN.has(sampling.status) && !resolved.has(sampling.samplingId)) {
          resolved.add(sampling.samplingId);
          items.push({ kind: 'sampling_resolved', sampling });
        }
      }
      return items;
    },
  };
}

/** Each sub-agent run's approval once while it waits, then once when it no longer does. */
function childApprovalFollower() {
  const announced = new Map<string, { runId: string; toolCallId: string }>();
  return {
    news(waiting: ChildApproval[]): FollowItem[] {
      const items: FollowItem[] = [];
      const keyOf = (a: { runId: string; toolCallId: string }) => `${a.runId} ${a.toolCallId}`;
      for (const approval of waiting) {
        if (announced.has(keyOf(approval))) continue;
        announced.set(keyOf(approval), { runId: approval.runId, toolCallId: approval.toolCallId });
        items.push({ kind: 'child_approval_requested', approval });
      }
      for (const [key, a] of announced) {
        if (waiting.some((w) => keyOf(w) === key)) continue;
        announced.delete(key);
        items.push({ kind: 'child_approval_resolved', ...a });
      }
      return items;
    },
  };
}

/**
 * Yields the run's events not in `after` as they are written, until `run_ended` (or the workflow
 * closed without one), or until the signal aborts. Each read is one pooled query, so nothing is held
 * between reads and an abort frees everything at once.
 */
export async function* followRunEvents(db: Queryable, runId: string, opts: FollowOptions): AsyncGenerator<FollowItem> {
  const cursor = opts.after;
  let lastProgressCheck = 0;
  const announced = new Set<string>();
  const samplings = samplingFollower();
  const childApprovals = childApprovalFollower();
  while (!opts.signal.aborted) {
    for (const item of samplings.news((await opts.samplings?.()) ?? [])) {
      if (opts.signal.aborted) return;
      yield item;
    }
    const waiting = (await opts.pendingInputs?.()) ?? [];
    for (const input of waiting) {
      if (announced.has(input.inputId) || opts.signal.aborted) continue;
      announced.add(input.inputId);
      yield { kind: 'input_requested', input };
    }
    for (const inputId of announced) {
      if (waiting.some((i) => i.inputId === inputId) || opts.signal.aborted) continue;
      announced.delete(inputId);
      yield { kind: 'input_resolved', inputId };
    }
    for (const item of childApprovals.news((await opts.childApprovals?.()) ?? [])) {
      if (opts.signal.aborted) return;
      yield item;
    }
    const ready = releasable(await listEvents(db, runId, cursor.upTo), cursor);
    for (const { event, cursor: at } of ready) {
      if (opts.signal.aborted) return;
      yield { kind: 'event', event, cursor: at };
      if (event.type === 'run_ended') return;
    }
    if (ready.length === 0 && Date.now() - lastProgressCheck >= opts.progressCheckMs) {
      lastProgressCheck = Date.now();
      const progress = await opts.progress();
      if (progress === 'ended') {
        // run_ended was committed with the result; a resume past it has nothing more to read.
        for (const event of await listEvents(db, runId, cursor.upTo)) {
          if (opts.signal.aborted) return;
          if (cursor.has(event.seq)) continue;
          cursor.add(event.seq);
          yield { kind: 'event', event, cursor: cursor.toString() };
        }
        return;
      }
      if (progress === 'closed_without_result') {
        yield { kind: 'closed_without_result' };
        return;
      }
    }
    await opts.changed();
  }
}
