import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { createEvalBody, evalAcceptedSchema, evalSummarySchema, evalViewSchema } from '../../core/eval-view';
import { cancelEval, listEvalsOf, readEval } from '../../use-cases/evals/evals';
import { startEval, type StartEvalDeps } from '../../use-cases/evals/start-eval';
import { idParams, problemResponse, queryInteger } from '../schemas';

const listEvalsQuery = z.strictObject({
  cursor: z.string().min(1).max(512).regex(/^[A-Za-z0-9_-]+$/).optional().describe('nextCursor of the previous page'),
  limit: queryInteger(1, 100).default(20),
});

const evalPageSchema = z.object({ evals: z.array(evalSummarySchema), nextCursor: z.string().nullable() });

/** POST, GET /v1/evals; GET /v1/evals/:id; POST /v1/evals/:id/cancel (docs/time-travel.md). */
export const evalRoutes: FastifyPluginAsyncZod<StartEvalDeps> = async (app, deps) => {
  app.post('/evals', {
    schema: {
      tags: ['evals'], body: createEvalBody,
      summary: 'Replay runs (or threads\' runs) with another agent or model, and score each replay',
      response: {
        202: evalAcceptedSchema, 400: problemResponse('Invalid request'),
        403: problemResponse('The role run, or the operator, is needed'),
        404: problemResponse('No such run, thread or agent'),
        409: problemResponse('A run named is still running, or the agent was deleted'),
      },
    },
  }, async (request, reply) => reply.code(202).send(await startEval(deps, request.caller, request.body)));

  app.get('/evals', {
    schema: {
      tags: ['evals'], summary: 'List evals, newest first', querystring: listEvalsQuery,
      response: { 200: evalPageSchema, 400: problemResponse('Invalid cursor') },
    },
  }, async (request) => listEvalsOf(deps.db, request.caller, request.query));

  app.get('/evals/:id', {
    schema: {
      tags: ['evals'], params: idParams,
      summary: 'An eval: each run\'s original and replay side by side, whether it passed, and the totals',
      response: { 200: evalViewSchema, 404: problemResponse('No such eval') },
    },
  }, async (request) => readEval(deps.db, request.caller, request.params.id));

  app.post('/evals/:id/cancel', {
    schema: {
      tags: ['evals'], summary: 'Cancel an eval and the replays it runs; an eval that has ended is left as it is', params: idParams,
      response: { 202: evalAcceptedSchema, 404: problemResponse('No such eval') },
    },
  }, async (request, reply) => reply.code(202).send(await cancelEval(deps, request.caller, request.params.id)));
};
