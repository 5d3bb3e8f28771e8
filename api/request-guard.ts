import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { findUnacceptable } from '../store/storable-text';
import { HttpProblem } from './problem';

async function guardRequest(request: FastifyRequest): Promise<void> {
  for (const [root, value] of [['params', request.params], ['querystring', request.query], ['body', request.body]] as const) {
    const reason = findUnacceptable(value, root);
    if (reason) throw new HttpProblem(400, reason, 'validation');
  }
}

/** One check for every route, before its schema: no handler sees text the database would refuse. */
export const requestGuard = fp(async (app: FastifyInstance) => {
  app.addHook('preValidation', guardRequest);
}, { name: 'request-guard' });
