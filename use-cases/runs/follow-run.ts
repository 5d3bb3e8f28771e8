import type { PendingInputView } from '../../core/run-view';
import { findIntegration } from '../../store/integrations/integrations';
import type { Db } from '../../store/pool';
import type { RunChangeFeed } from '../../store/runs/change-feed';
import type { RunEvent } from '../../store/runs/events';
import { pendingRunInputs } from '../../store/runs/inputs';
import { followedSamplings } from '../../store/runs/samplings';
import { requestedArguments } from './approvals';
import type { EventCursor } from './event-cursor';
import { followRunEvents, samplingView, type ChildApproval, type FollowItem, type SamplingView } from './follow-events';
import { followTurnText, type TextItem } from './follow-text';
import { storedProgress } from './run-progress';
import { childrenWaits, pendingInputView, type ChildrenWaits } from './runs';

/*
 * Following a run for GET /v1/runs/:id/events: its numbered events as they are written (each with
 * the follower's cursor), the questions and sampling requests that wait beside them, its sub-agent
 * runs' approvals, and the model's words as it writes them; until run_ended.
 */

export interface FollowRunDeps {
  db: Db;
  changes: RunChangeFeed;
}

/** Where a follower starts: after the events it has had (`resumed` when it had some already), until `signal` aborts. */
export interface FollowFrom {
  after: EventCursor;
  resumed: boolean;
  signal: AbortSignal;
}

/** A numbered event as followers read it (eventPresenter below). */
export interface PresentedEvent {
  kind: 'event';
  /** the follower's cursor once it has this event: its SSE id */
  cursor: string;
  type: RunEvent['type'];
  data: Record<string, unknown>;
}

/** One thing a follower is told, in the order it happens. */
export type RunStreamItem = PresentedEvent | Exclude<FollowItem, { kind: 'event' }> | { kind: 'text'; text: TextItem };

/** Hands one item to the follower; false once it is gone (nothing more is read for it). */
export type Deliver = (item: RunStreamItem) => Promise<boolean>;

// Streams wait on the process's one LISTEN connection; this re-read of a silent stream is only a safety net.
const IDLE_REREAD_MS = 60_000;
/** While the run's sub-agents run: how soon the stream looks at them again. */
const CHILDREN_REREAD_MS = 1_000;

/**
 * Tells `deliver` everything about the run that happens after `from.after`, until run_ended (a
 * run closed from outside gets its result and run_ended from the API's reconciliation), the
 * follower goes away, or `from.signal` aborts. A resumed follower's words begin with text_reset.
 */
export async function followRun(deps: FollowRunDeps, runId: string, from: FollowFrom, deliver: Deliver): Promise<void> {
  const present = eventPresenter(deps.db, runId);
  const watch = deps.changes.watch(runId, ['event', 'progress', 'ended', 'input']);
  const waits = new WaitsBeside(deps.db, runId);
  // The model's words as it writes them: beside the numbered events, never replayed (no id).
  const words = followTurnText(deps, runId, (text) => deliver({ kind: 'text', text }), { resumed: from.resumed });
  try {
    const items = followRunEvents(deps.db, runId, {
      after: from.after, progressCheckMs: 0, signal: from.signal,
      changed: () => watch.next(waits.childrenRunning ? CHILDREN_REREAD_MS : IDLE_REREAD_MS, from.signal),
      progress: () => storedProgress(deps.db, runId),
      pendingInputs: () => waits.pendingInputs(), childApprovals: () => waits.childApprovals(), samplings: () => waits.samplings(),
    });
    for await (const item of items) {
      if (!(await deliver(item.kind === 'event' ? await present(item.event, item.cursor) : item))) break;
    }
  } finally {
    watch.close();
    words.close();
  }
}

/** What a run waits for beside its event log, read on every wake of its follower. */
class WaitsBeside {
  // Read once per wake (by pendingInputs, the first to ask); their changes are announced on their own runs, not this one.
  private children: ChildrenWaits | undefined;
  // Sampling requests resolved before the stream began are not news to it.
  private readonly since = new Date();

  constructor(private readonly db: Db, private readonly runId: string) {}

  /** While any of the run's sub-agent runs runs, the follower looks again soon. */
  get childrenRunning(): boolean {
    return this.children?.running ?? false;
  }

  async pendingInputs(): Promise<PendingInputView[]> {
    this.children = await childrenWaits(this.db, this.runId);
    return [...(await pendingRunInputs(this.db, this.runId)).map(pendingInputView), ...this.children.pendingInputs];
  }

  async childApprovals(): Promise<ChildApproval[]> {
    return (this.children?.pendingApprovals ?? []).filter((a): a is typeof a & { runId: string } => a.runId !== undefined);
  }

  async samplings(): Promise<SamplingView[]> {
    return (await followedSamplings(this.db, this.runId, this.since)).map(samplingView);
  }
}

/**
 * Event data as stored, plus its seq, type and time, and the integration's name for tool calls.
 * `type` is always the event's; a tool call's kind is `toolType` (rows written by earlier builds
 * carry it as `type`).
 */
function eventPresenter(db: Db, runId: string) {
  const names = new Map<string, string | null>();
  const integrationName = async (id: string) => {
    if (!names.has(id)) names.set(id, (await findIntegration(db, id))?.name ?? null);
    return names.get(id) ?? null;
  };
  return async (event: RunEvent, cursor: string): Promise<PresentedEvent> => {
    const integrationId = event.data.integrationId;
    const extra = typeof integrationId === 'string' ? { integrationName: await integrationName(integrationId) } : {};
    // A reviewer needs the arguments; they stay in the transcript and are read for the stream only.
    const args = event.type === 'approval_requested' ? { arguments: await requestedArguments(db, runId, event) } : {};
    const { type: olderToolType, ...data } = event.data;
    const toolType = data.toolType ?? olderToolType;
    const presented = { seq: event.seq, at: event.createdAt, ...data, ...(toolType === undefined ? {} : { toolType }), ...extra, ...args };
    return { kind: 'event', cursor, type: event.type, data: { ...presented, type: event.type } };
  };
}
