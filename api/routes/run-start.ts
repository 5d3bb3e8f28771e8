import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { runAccepted, startRun } from '../../use-cases/runs/start-run';
import { problemResponse } from '../schemas';
import { runAcceptedSchema } from '../../core/run-view';
import { startRunBody, startRunHeaders, threadRunParams } from './run-schemas';
import type { RunRouteDeps } from './route-deps';

const CONFLICTS = 'The thread is busy with another run (code thread_busy), '
  + 'or the Idempotency-Key was used with another body (code conflict)';

/** POST /v1/threads/:threadId/runs. */
export const runStartRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  app.post('/threads/:threadId/runs', {
    schema: {
      tags: ['runs'], summary: 'Start a run on a thread',
      params: threadRunParams,
      headers: startRunHeaders, body: startRunBody,
      response: {
        202: runAcceptedSchema,
        400: problemResponse('Invalid request'),
        404: problemResponse('No such thread or agent'),
        409: problemResponse(CONFLICTS),
      },
    },
  }, async (request, reply) => {
    const started = await startRun(deps, request.caller, {
      threadId: request.params.threadId, ...request.body, idempotencyKey: request.headers['idempotency-key'],
    });
    return reply.code(202).send(await runAccepted(deps.db, started));
  });
};
