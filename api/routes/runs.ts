import type { Client } from '@temporalio/client';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApprovalKeyKind } from '../../core/approval';
import { decideApproval } from '../../use-cases/runs/approvals';
import type { Db } from '../../store/pool';
import type { RunChangeFeed } from '../../store/runs/change-feed';
import { cancelRun, readRunWhenEnded } from '../../use-cases/runs/runs';
import { runAccepted, startRun } from '../../use-cases/runs/start-run';
import { runNotFound } from '../../use-cases/runs/runs';
import type { RunViewCache } from '../../use-cases/runs/run-view-cache';
import type { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import { closingSignal } from '../closing-signal';
import { idParams, problemResponse } from '../schemas';
import { runAcceptedSchema, runViewSchema } from '../../core/run-view';
import {
  approvalParams, cancelledRunSchema, decideApprovalBody, readRunQuery, startRunBody, startRunHeaders, threadRunParams,
} from './run-schemas';

export interface RunRouteDeps {
  db: Db;
  /** where GET /v1/runs/:id reads (see AppDeps.reads) */
  reads: Db;
  client: Client;
  taskQueue: string;
  changes: RunChangeFeed;
  /** the run objects this process has read, until their runs change */
  views: RunViewCache;
  searchAttributes: SearchAttributeGuard;
  /** which key a request carries, recorded with an approval decision */
  keyKind: (request: FastifyRequest) => ApprovalKeyKind;
}

export const runRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  // Long polls would otherwise hold a shutdown for up to MAX_WAIT_MS.
  const closing = closingSignal(app);

  app.post(
    '/threads/:threadId/runs', {
      schema: {
        tags: ['runs'], summary: 'Start a run on a thread',
        params: threadRunParams,
        headers: startRunHeaders, body: startRunBody,
        response: {
          202: runAcceptedSchema,
          400: problemResponse('Invalid request'),
          404: problemResponse('No such thread or agent'),
          409: problemResponse('The thread is busy with another run (code thread_busy), or the Idempotency-Key was used with another body (code conflict)'),
        },
      },
    }, async (request, reply) => {
      const started = await startRun(deps, {
        threadId: request.params.threadId, ...request.body, idempotencyKey: request.headers['idempotency-key'],
      });
      return reply.code(202).send(await runAccepted(deps.db, started));
    },
  );

  app.get('/runs/:id', {
    schema: {
      tags: ['runs'], summary: 'Read a run, optionally waiting for it to end', params: idParams, querystring: readRunQuery,
      response: { 200: runViewSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such run') },
    },
  }, async (request) => {
    const run = await readRunWhenEnded({ ...deps, db: deps.reads }, request.params.id, request.query.waitMs, closing);
    if (!run) throw runNotFound(request.params.id);
    return run;
  });

  app.post('/runs/:id/approvals/:toolCallId', {
    schema: {
      tags: ['runs'], summary: 'Approve or deny a tool call that waits for approval; answers with the run once the decision is recorded',
      params: approvalParams,
      body: decideApprovalBody,
      response: {
        200: runViewSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such run, or no such call waiting for approval'),
        409: problemResponse('The call was already decided, timed out or cancelled (code already_decided; approvalStatus and decision name how)'),
        503: problemResponse('No worker took the decision in time'),
      },
    },
  }, async (request) => {
    const run = await decideApproval(deps, {
      runId: request.params.id, toolCallId: request.params.toolCallId, ...request.body, keyKind: deps.keyKind(request),
    });
    deps.views.forget(request.params.id);
    return run;
  });

  app.post('/runs/:id/cancel', {
    schema: {
      tags: ['runs'], summary: 'Cancel a run; a run that has already ended is left as it is', params: idParams,
      response: {
        202: cancelledRunSchema,
        404: problemResponse('No such run'),
      },
    },
  }, async (request, reply) => {
    const run = await cancelRun(deps, request.params.id);
    deps.views.forget(request.params.id);
    if (!run) throw runNotFound(request.params.id);
    return reply.code(202).send({ id: run.id, status: run.status });
  });
};
