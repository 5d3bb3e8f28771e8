import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { problem, sendProblem } from '../problem';
import { problemResponse } from '../schemas';
import { featuresOffWithoutKey } from '../../platform/secrets/key-ring';
import { checkReadiness, type Check, type ReadinessDeps } from '../../use-cases/readiness';

const featuresOffSchema = z.array(z.string()).describe('what is off until the operator configures it (SECRETS_KEY)');

const checksSchema = z.object({
  database: z.string(), temporal: z.string(), workers: z.string(),
  searchAttributes: z.string().describe('missing: the namespace lacks search attributes runs start with, and this engine may not add them '
    + '(detail names them and the command that adds them)'),
}) satisfies z.ZodType<Record<Check, string>>;

const READY_SUMMARY = 'Readiness: PostgreSQL and Temporal answer, the namespace has the search attributes runs start with, '
  + 'and a worker polls the task queue';

export const healthRoutes: FastifyPluginAsyncZod<ReadinessDeps> = async (app, deps) => {
  app.get('/healthz', {
    config: { rateLimit: false },
    schema: {
      tags: ['health'], summary: 'Liveness: the process answers', security: [],
      response: { 200: z.object({ status: z.enum(['ok']) }) },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    config: { rateLimit: false },
    schema: {
      tags: ['health'], summary: READY_SUMMARY, security: [],
      response: {
        200: z.object({ status: z.enum(['ok']), checks: checksSchema, featuresOff: featuresOffSchema.optional() }),
        503: problemResponse('A dependency does not answer, no worker polls, or the namespace lacks search attributes; detail names it'),
      },
    },
  }, async (request, reply) => {
    const { checks, problems, causes } = await checkReadiness(deps);
    // Ready all the same: what is off waits for the operator's configuration, not for time.
    const featuresOff = featuresOffWithoutKey();
    const off = featuresOff.length > 0 ? { featuresOff } : {};
    if (problems.length === 0) return { status: 'ok' as const, checks, ...off };
    // The causes go to the log only: this endpoint is unauthenticated, and errors can name hosts.
    request.log.warn({ causes }, 'not ready');
    return sendProblem(reply, problem(503, `Not ready: ${problems.join('; ')}`, 'not_ready', { checks, ...off }));
  });
};
