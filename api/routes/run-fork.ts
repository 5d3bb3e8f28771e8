import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { runAcceptedSchema } from '../../core/run-view';
import { forkRun, type ForkRunDeps } from '../../use-cases/runs/fork-run';
import { idParams, problemResponse } from '../schemas';
import { forkRunBody } from './run-schemas';

/** POST /v1/runs/:id/fork (docs/time-travel.md). */
export const runForkRoutes: FastifyPluginAsyncZod<ForkRunDeps> = async (app, deps) => {
  app.post('/runs/:id/fork', {
    schema: {
      tags: ['runs'], summary: 'Fork a run at the start of one of its turns: a new run on a new thread, which runs live from there',
      params: idParams, body: forkRunBody,
      response: {
        202: runAcceptedSchema,
        400: problemResponse('Invalid request: a tool call not of a turn before atTurn, a result over its bound, input with atTurn > 1'),
        403: problemResponse('model.baseUrl and model.apiKeyEnv need the admin key'),
        404: problemResponse('No such run or agent'),
        409: problemResponse('atTurn is past the run\'s last ended turn + 1 (or below 1), or the agent is disabled'),
      },
    },
  }, async (request, reply) => {
    const { run } = await forkRun(deps, request.caller, { runId: request.params.id, ...request.body });
    return reply.code(202).send({ id: run.id, threadId: run.threadId, status: 'running' });
  });
};
