import type { Client } from '@temporalio/client';
import type { FastifyPluginAsync } from 'fastify';
import { findIntegration } from '../../core/db/integrations';
import type { Db } from '../../core/db/pool';
import { findRun, findRunResult, type RunEvent } from '../../core/db/run-store';
import { followRunEvents, type RunProgress } from '../../core/runs/follow-events';
import { HttpProblem } from '../problem';
import { openSse } from '../sse';
import { idParams, problemResponse } from '../schemas';

export interface RunEventRouteDeps {
  db: Db;
  client: Client;
  /** comment lines on an idle stream, so that proxies keep it open; default 15 s */
  heartbeatMs?: number;
}

// Polling, not LISTEN/NOTIFY: a LISTEN holds a dedicated connection per stream (or a shared
// listener to fan out), while a poll is one short pooled query and needs no trigger in the schema.
const POLL_MS = 300;
const PROGRESS_CHECK_MS = 5_000;
const DESCRIBE_DEADLINE_MS = 2_000;
const DEFAULT_HEARTBEAT_MS = 15_000;

const eventsQuery = {
  type: 'object', additionalProperties: false,
  properties: { after: { type: 'integer', minimum: 0, description: 'like Last-Event-ID, for clients that cannot set headers' } },
} as const;

const eventsHeaders = {
  type: 'object',
  properties: { 'last-event-id': { type: 'string', pattern: '^[0-9]{1,9}$', description: 'resume after this event id (seq)' } },
} as const;

export const runEventRoutes: FastifyPluginAsync<RunEventRouteDeps> = async (app, deps) => {
  // Open streams would otherwise hold a shutdown until their runs end.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());

  app.get<{ Params: { id: string }; Querystring: { after?: number }; Headers: { 'last-event-id'?: string } }>('/runs/:id/events', {
    schema: {
      tags: ['runs'],
      summary: 'Follow a run as Server-Sent Events (event id = seq; resumable with Last-Event-ID); closes after run_ended',
      params: idParams, querystring: eventsQuery, headers: eventsHeaders,
      response: {
        200: { description: 'text/event-stream: run_started, turn_started, turn_ended, tool_call_started, tool_call_ended, run_ended', content: { 'text/event-stream': { schema: { type: 'string' } } } },
        400: problemResponse('Invalid Last-Event-ID'),
        404: problemResponse('No such run'),
      },
    },
  }, async (request, reply) => {
    const runId = request.params.id;
    if (!(await findRun(deps.db, runId))) throw new HttpProblem(404, `Run ${runId} does not exist`, 'not_found');
    const lastEventId = request.headers['last-event-id'];
    const afterSeq = lastEventId !== undefined ? Number(lastEventId) : (request.query.after ?? 0);

    const stream = openSse(request, reply, { heartbeatMs: deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, stop: closing.signal });
    const present = eventPresenter(deps.db);
    try {
      const items = followRunEvents(deps.db, runId, {
        afterSeq, pollMs: POLL_MS, progressCheckMs: PROGRESS_CHECK_MS, signal: stream.signal,
        progress: () => runProgress(deps, runId),
      });
      for await (const item of items) {
        const sent = item.kind === 'event'
          ? await stream.send({ id: item.event.seq, event: item.event.type, data: await present(item.event) })
          : await stream.send({
            event: 'run_ended',
            data: {
              type: 'run_ended', status: 'failed', stopReason: 'error',
              error: { type: 'WorkflowClosed', message: 'The run\'s workflow closed without recording an outcome (terminated or timed out)' },
            },
          });
        if (!sent) break;
      }
    } catch (err) {
      request.log.error({ err, runId }, 'run event stream failed');
    } finally {
      stream.close();
    }
  });
};

/** Event data as stored, plus its seq, type and time, and the integration's name for tool calls. */
function eventPresenter(db: Db) {
  const names = new Map<string, string | null>();
  const integrationName = async (id: string) => {
    if (!names.has(id)) names.set(id, (await findIntegration(db, id))?.name ?? null);
    return names.get(id) ?? null;
  };
  return async (event: RunEvent): Promise<Record<string, unknown>> => {
    const integrationId = event.data.integrationId;
    const extra = typeof integrationId === 'string' ? { integrationName: await integrationName(integrationId) } : {};
    return { seq: event.seq, type: event.type, at: event.createdAt, ...event.data, ...extra };
  };
}

async function runProgress(deps: { db: Db; client: Client }, runId: string): Promise<RunProgress> {
  if (await findRunResult(deps.db, runId)) return 'ended';
  try {
    const description = await deps.client.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () => deps.client.workflow.getHandle(runId).describe());
    if (description.status.name === 'RUNNING') return 'running';
  } catch {
    return 'running'; // not started yet, or Temporal unreachable: keep following
  }
  // Closed: finishRun commits before the workflow completes, so only a terminated run lacks a result.
  return (await findRunResult(deps.db, runId)) ? 'ended' : 'closed_without_result';
}
