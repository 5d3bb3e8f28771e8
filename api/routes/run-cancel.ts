import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { cancelRunFor, runNotFound } from '../../use-cases/runs/runs';
import { idParams, problemResponse } from '../schemas';
import { cancelledRunSchema } from './run-schemas';
import type { RunRouteDeps } from './route-deps';

/** POST /v1/runs/:id/cancel. */
export const runCancelRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  app.post('/runs/:id/cancel', {
    schema: {
      tags: ['runs'], summary: 'Cancel a run; a run that has already ended is left as it is', params: idParams,
      response: {
        202: cancelledRunSchema,
        404: problemResponse('No such run'),
      },
    },
  }, async (request, reply) => {
    const run = await cancelRunFor(deps, request.caller, request.params.id);
    if (!run) throw runNotFound(request.params.id);
    deps.views.forget(request.params.id);
    return reply.code(202).send({ id: run.id, status: run.status });
  });
};
