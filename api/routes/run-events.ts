import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EventCursor } from '../../use-cases/runs/event-cursor';
import { followRun, type FollowRunDeps, type RunStreamItem } from '../../use-cases/runs/follow-run';
import { requireRun } from '../../use-cases/runs/runs';
import { openSse } from '../sse';
import { idParams, problemResponse } from '../schemas';
import { closingSignal } from '../closing-signal';

export interface RunEventRouteDeps extends FollowRunDeps {
  /** comment lines on an idle stream, so that proxies keep it open; default 15 s */
  heartbeatMs?: number;
}

const DEFAULT_HEARTBEAT_MS = 15_000;

/** An event's id: the events a stream had sent (`12`: up to 12; `12,14-15`: and 14 and 15, which came ahead of 13). */
const cursor = z.string()
  .refine((text) => EventCursor.parse(text) !== undefined, 'must be an event id of this stream, such as 12 or 12,14-15');

const eventsQuery = z.strictObject({
  after: cursor.optional().describe('like Last-Event-ID, for clients that cannot set headers'),
});

const eventsHeaders = z.looseObject({
  'last-event-id': cursor.optional().describe('resume after this event id'),
});

const STREAM_DESCRIPTION = 'text/event-stream: run_started, turn_started, turn_ended, tool_call_started, tool_call_ended, '
  + 'approval_requested, approval_resolved, child_run_started, child_run_ended, run_ended; approval_requested and approval_resolved '
  + '(no id) for the approvals its running sub-agent runs wait for, with their runId; input_requested (no id) for each question an '
  + 'MCP server asks that waits for an answer, and input_resolved (no id) once it no longer waits; sampling_requested and '
  + 'sampling_resolved (no id) for each request of an MCP server to sample the run\'s model (its status, and its usage once '
  + 'answered); text_delta (no id, not replayed) with {turn, attempt, text}: the model\'s words as it writes them (a stream '
  + 'joining mid-turn gets the text so far first; one resumed with Last-Event-ID or after gets text_reset before it), text_reset '
  + '{turn, attempt} before a turn\'s text starts again (a retried attempt, a resumed stream, or the whole text again after the '
  + 'worker\'s writes fell behind), and tool_input_delta (no id) with {turn, attempt, toolCallId, text}: a tool call\'s '
  + 'arguments as the model writes them, where its provider streams them';

/** run_ended for a run whose workflow closed without recording a result. */
const WORKFLOW_CLOSED_EVENT = {
  type: 'run_ended', status: 'failed', stopReason: 'error',
  error: { type: 'WorkflowClosed', message: 'The run\'s workflow closed without recording an outcome (terminated or timed out)' },
};

interface SseFrame { id?: string; event: string; data: unknown }

type FrameOf<K extends RunStreamItem['kind']> = (item: Extract<RunStreamItem, { kind: K }>, runId: string) => SseFrame;

/** Each item a follower is told, as the frame the stream sends: its event name and its data. */
const FRAMES: { [K in RunStreamItem['kind']]: FrameOf<K> } = {
  event: (item) => ({ id: item.cursor, event: item.type, data: item.data }),
  input_requested: (item, runId) => ({ event: item.kind, data: { type: item.kind, runId, ...item.input } }),
  input_resolved: (item, runId) => ({ event: item.kind, data: { type: item.kind, runId, inputId: item.inputId } }),
  sampling_requested: (item, runId) => ({ event: item.kind, data: { type: item.kind, runId, ...item.sampling } }),
  sampling_resolved: (item, runId) => ({ event: item.kind, data: { type: item.kind, runId, ...item.sampling } }),
  // A sub-agent run's approval, under the names of the run's own, with the run that waits.
  child_approval_requested: (item) => ({ event: 'approval_requested', data: { type: 'approval_requested', ...item.approval } }),
  child_approval_resolved: (item) => ({
    event: 'approval_resolved', data: { type: 'approval_resolved', runId: item.runId, toolCallId: item.toolCallId },
  }),
  closed_without_result: () => ({ event: 'run_ended', data: WORKFLOW_CLOSED_EVENT }),
  text: ({ text }, runId) => ({ event: text.event, data: { type: text.event, runId, ...text.data } }),
};

function frameOf(item: RunStreamItem, runId: string): SseFrame {
  const frame = FRAMES[item.kind] as (item: RunStreamItem, runId: string) => SseFrame;
  return frame(item, runId);
}

export const runEventRoutes: FastifyPluginAsyncZod<RunEventRouteDeps> = async (app, deps) => {
  // Open streams would otherwise hold a shutdown until their runs end.
  const closing = closingSignal(app);

  app.get('/runs/:id/events', {
    schema: {
      tags: ['runs'],
      summary: 'Follow a run as Server-Sent Events (each event as it is written; resumable with Last-Event-ID); closes after run_ended',
      params: idParams, querystring: eventsQuery, headers: eventsHeaders,
      response: {
        200: { description: STREAM_DESCRIPTION, content: { 'text/event-stream': { schema: z.string() } } },
        400: problemResponse('Invalid Last-Event-ID'),
        404: problemResponse('No such run'),
      },
    },
  }, async (request, reply) => {
    const runId = request.params.id;
    await requireRun(deps.db, request.caller, runId);
    const given = request.headers['last-event-id'] ?? request.query.after;
    const stream = openSse(request, reply, { heartbeatMs: deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, stop: closing });
    const from = { after: EventCursor.parse(given ?? '0')!, resumed: given !== undefined, signal: stream.signal };
    try {
      await followRun(deps, runId, from, (item) => stream.send(frameOf(item, runId)));
    } catch (err) {
      request.log.error({ err, runId }, 'run event stream failed');
    } finally {
      stream.close();
    }
  });
};
