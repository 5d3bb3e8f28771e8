import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { budgetAddSchema } from '../../core/run-limits';
import { runViewSchema } from '../../core/run-view';
import { decideBudgetFor } from '../../use-cases/runs/budget';
import { problemResponse } from '../schemas';
import type { RunRouteDeps } from './route-deps';

const params = z.strictObject({ id: z.string().min(1).max(128) });

const budgetBody = z.union([
  z.strictObject({ add: budgetAddSchema.describe('raise these limits by these amounts (role manage); the run goes on') }),
  z.strictObject({ stop: z.literal(true).describe('end the run now, stopReason "budget" (role decide)') }),
]).meta({ id: 'BudgetDecision' });

/** POST /v1/runs/:id/budget: a person's answer to a run that waits for budget (limits.onLimit "ask"). */
export const runBudgetRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  app.post('/runs/:id/budget', {
    // decide at the door; raising limits needs manage as well (the use case checks it).
    config: { role: 'decide' },
    schema: {
      tags: ['runs'],
      summary: 'Raise the limits of a run that waits for budget, or stop it; answers with the run once the answer is recorded',
      params,
      body: budgetBody,
      response: {
        200: runViewSchema, 400: problemResponse('Invalid request'), 403: problemResponse('The caller lacks the role'),
        404: problemResponse('No such run'),
        409: problemResponse('The run does not wait for budget, or its request was answered, timed out or cancelled'),
        503: problemResponse('No worker took the answer in time'),
      },
    },
  }, async (request) => {
    const run = await decideBudgetFor(deps, request.caller, request.params.id, request.body);
    deps.views.forget(request.params.id);
    return run;
  });
};
