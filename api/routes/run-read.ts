import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { readRunFor, runNotFound } from '../../use-cases/runs/runs';
import { closingSignal } from '../closing-signal';
import { idParams, problemResponse } from '../schemas';
import { runViewSchema } from '../../core/run-view';
import { readRunQuery } from './run-schemas';
import type { RunRouteDeps } from './route-deps';

/** GET /v1/runs/:id, optionally a long poll until the run ends. */
export const runReadRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  // Long polls would otherwise hold a shutdown for up to MAX_WAIT_MS.
  const closing = closingSignal(app);

  app.get('/runs/:id', {
    schema: {
      tags: ['runs'], summary: 'Read a run, optionally waiting for it to end', params: idParams, querystring: readRunQuery,
      response: { 200: runViewSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such run') },
    },
  }, async (request) => {
    const run = await readRunFor({ ...deps, db: deps.reads }, request.caller, request.params.id, request.query.waitMs, closing);
    if (!run) throw runNotFound(request.params.id);
    return run;
  });
};
