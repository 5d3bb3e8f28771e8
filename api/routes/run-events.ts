import { z } from 'zod';
import { childrenWaits } from '../../use-cases/runs/runs';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { findIntegration } from '../../store/integrations/integrations';
import type { Db } from '../../store/pool';
import type { RunChangeFeed } from '../../store/runs/change-feed';
import { toolCallArguments } from '../../store/approvals';
import { findRunResult } from '../../store/runs/results';
import { type RunEvent } from '../../store/runs/events';
import { findRun } from '../../store/runs/runs';
import { pendingRunInputs } from '../../store/runs/inputs';
import { followedSamplings } from '../../store/runs/samplings';
import { followRunEvents, samplingView } from '../../use-cases/runs/follow-events';
import { EventCursor } from '../../use-cases/runs/event-cursor';
import { followTurnText } from '../../use-cases/runs/follow-text';
import { pendingInputView } from '../../use-cases/runs/runs';
import { runNotFound } from '../../use-cases/runs/runs';
import { openSse, type SseStream } from '../sse';
import { idParams, problemResponse } from '../schemas';
import { closingSignal } from '../closing-signal';

export interface RunEventRouteDeps {
  db: Db;
  changes: RunChangeFeed;
  /** comment lines on an idle stream, so that proxies keep it open; default 15 s */
  heartbeatMs?: number;
}

// Streams wait on the process's one LISTEN connection; this re-read of a silent stream is only a safety net.
const IDLE_REREAD_MS = 60_000;
/** While the run's sub-agents run: how soon the stream looks at them again. */
const CHILDREN_REREAD_MS = 1_000;
const DEFAULT_HEARTBEAT_MS = 15_000;

/** An event's id: the events a stream had sent (`12`: up to 12; `12,14-15`: and 14 and 15, which came ahead of 13). */
const cursor = z.string().refine((text) => EventCursor.parse(text) !== undefined, 'must be an event id of this stream, such as 12 or 12,14-15');

const eventsQuery = z.strictObject({
  after: cursor.optional().describe('like Last-Event-ID, for clients that cannot set headers'),
});

const eventsHeaders = z.looseObject({
  'last-event-id': cursor.optional().describe('resume after this event id'),
});

export const runEventRoutes: FastifyPluginAsyncZod<RunEventRouteDeps> = async (app, deps) => {
  // Open streams would otherwise hold a shutdown until their runs end.
  const closing = closingSignal(app);

  app.get('/runs/:id/events', {
    schema: {
      tags: ['runs'],
      summary: 'Follow a run as Server-Sent Events (each event as it is written; resumable with Last-Event-ID); closes after run_ended',
      params: idParams, querystring: eventsQuery, headers: eventsHeaders,
      response: {
        200: { description: 'text/event-stream: run_started, turn_started, turn_ended, tool_call_started, tool_call_ended, approval_requested, approval_resolved, child_run_started, child_run_ended, run_ended; approval_requested and approval_resolved (no id) for the approvals its running sub-agent runs wait for, with their runId; input_requested (no id) for each question an MCP server asks that waits for an answer, and input_resolved (no id) once it no longer waits; sampling_requested and sampling_resolved (no id) for each request of an MCP server to sample the run\'s model (its status, and its usage once answered); text_delta (no id, not replayed) with {turn, attempt, text}: the model\'s words as it writes them (a stream joining mid-turn gets the text so far first; one resumed with Last-Event-ID or after gets text_reset before it), text_reset {turn, attempt} before a turn\'s text starts again (a retried attempt, a resumed stream, or the whole text again after the worker\'s writes fell behind), and tool_input_delta (no id) with {turn, attempt, toolCallId, text}: a tool call\'s arguments as the model writes them, where its provider streams them', content: { 'text/event-stream': { schema: z.string() } } },
        400: problemResponse('Invalid Last-Event-ID'),
        404: problemResponse('No such run'),
      },
    },
  }, async (request, reply) => {
    const runId = request.params.id;
    if (!(await findRun(deps.db, runId))) throw runNotFound(runId);
    const lastEventId = request.headers['last-event-id'];
    const after = EventCursor.parse(lastEventId ?? request.query.after ?? '0')!;
    const resumed = lastEventId !== undefined || request.query.after !== undefined;
    const stream = openSse(request, reply, { heartbeatMs: deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, stop: closing });
    try {
      await sendRunEvents(deps, runId, { after, resumed }, stream);
    } catch (err) {
      request.log.error({ err, runId }, 'run event stream failed');
    } finally {
      stream.close();
    }
  });
};

/** run_ended for a run whose workflow closed without recording a result. */
const WORKFLOW_CLOSED_EVENT = {
  type: 'run_ended', status: 'failed', stopReason: 'error',
  error: { type: 'WorkflowClosed', message: 'The run\'s workflow closed without recording an outcome (terminated or timed out)' },
};

/**
 * The run's events not in `after` until run_ended, then the stream ends; questions waiting for an
 * answer go as input_requested, then input_resolved. A `resumed` stream's words begin with text_reset.
 */
async function sendRunEvents(deps: RunEventRouteDeps, runId: string, { after, resumed }: { after: EventCursor; resumed: boolean }, stream: SseStream): Promise<void> {
  const present = eventPresenter(deps.db, runId);
  const watch = deps.changes.watch(runId, ['event', 'progress', 'ended', 'input']);
  // Sampling requests resolved before the stream began are not news to it.
  const since = new Date();
  // Its sub-agents' runs: read once per wake (by pendingInputs, the first to ask), and while any
  // runs, the stream looks again soon (their changes are announced on their own runs, not this one).
  let children: Awaited<ReturnType<typeof childrenWaits>> | undefined;
  // The model's words as it writes them: beside the numbered events, never replayed (no id).
  const words = followTurnText(deps, runId, (item) => stream.send({ event: item.event, data: { type: item.event, runId, ...item.data } }), { resumed });
  try {
    // A run closed from outside gets its result and run_ended from the API's reconciliation.
    const items = followRunEvents(deps.db, runId, {
      after, progressCheckMs: 0, signal: stream.signal,
      changed: () => watch.next(children?.running ? CHILDREN_REREAD_MS : IDLE_REREAD_MS, stream.signal),
      progress: async () => ((await findRunResult(deps.db, runId)) ? 'ended' : 'running'),
      pendingInputs: async () => {
        children = await childrenWaits(deps.db, runId);
        return [...(await pendingRunInputs(deps.db, runId)).map(pendingInputView), ...children.pendingInputs];
      },
      childApprovals: async () => (children?.pendingApprovals ?? []).filter((a): a is typeof a & { runId: string } => a.runId !== undefined),
      samplings: async () => (await followedSamplings(deps.db, runId, since)).map(samplingView),
    });
    for await (const item of items) {
      const sent = item.kind === 'event'
        ? await stream.send({ id: item.cursor, event: item.event.type, data: await present(item.event) })
        : item.kind === 'input_requested'
          ? await stream.send({ event: 'input_requested', data: { type: 'input_requested', runId, ...item.input } })
          : item.kind === 'input_resolved'
            ? await stream.send({ event: 'input_resolved', data: { type: 'input_resolved', runId, inputId: item.inputId } })
            : item.kind === 'sampling_requested' || item.kind === 'sampling_resolved'
              ? await stream.send({ event: item.kind, data: { type: item.kind, runId, ...item.sampling } })
              : item.kind === 'child_approval_requested'
                ? await stream.send({ event: 'approval_requested', data: { type: 'approval_requested', ...item.approval } })
                : item.kind === 'child_approval_resolved'
                  ? await stream.send({ event: 'approval_resolved', data: { type: 'approval_resolved', runId: item.runId, toolCallId: item.toolCallId } })
                  : await stream.send({ event: 'run_ended', data: WORKFLOW_CLOSED_EVENT });
      if (!sent) break;
    }
  } finally {
    watch.close();
    words.close();
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
  return async (event: RunEvent): Promise<Record<string, unknown>> => {
    const integrationId = event.data.integrationId;
    const extra = typeof integrationId === 'string' ? { integrationName: await integrationName(integrationId) } : {};
    // A reviewer needs the arguments; they stay in the transcript and are read for the stream only.
    const args = event.type === 'approval_requested' ? { arguments: await toolCallArguments(db, runId, event.data) } : {};
    const { type: olderToolType, ...data } = event.data;
    const toolType = data.toolType ?? olderToolType;
    return { seq: event.seq, at: event.createdAt, ...data, ...(toolType === undefined ? {} : { toolType }), ...extra, ...args, type: event.type };
  };
}
