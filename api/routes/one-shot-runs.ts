import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { runAccepted, startRunOnNewThread, type StartRunDeps } from '../../use-cases/runs/start-run';
import { problemResponse } from '../schemas';
import { runAcceptedSchema } from '../../core/run-view';
import { startOneShotRunBody, startRunHeaders } from './run-schemas';

/**
 * `POST /v1/runs`: a run on a thread of its own, in one request, for work that is not a
 * conversation (a thread and a run in one call, as OpenAI's "create thread and run"). The thread
 * is an ordinary one: later runs may continue it with POST /v1/threads/:threadId/runs.
 */
export const oneShotRunRoutes: FastifyPluginAsyncZod<StartRunDeps> = async (app, deps) => {
  app.post('/runs', {
    schema: {
      tags: ['runs'], summary: 'Start a run on a new thread of the agent (by id or name)',
      headers: startRunHeaders, body: startOneShotRunBody,
      response: {
        202: runAcceptedSchema,
        400: problemResponse('Invalid request'),
        404: problemResponse('No such agent'),
        409: problemResponse('The agent was deleted (agent_disabled), or the Idempotency-Key was used with another body (conflict)'),
      },
    },
  }, async (request, reply) => {
    const { agentId: agentRef, ...rest } = request.body;
    const idempotencyKey = request.headers['idempotency-key'];
    const started = await startRunOnNewThread(deps, request.caller, { agentRef, ...rest, idempotencyKey });
    return reply.code(202).send(await runAccepted(deps.db, started));
  });
};
