import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { integrationCapabilities } from '../../use-cases/integrations/integration-capabilities';
import { callerGoneSignal, closingSignal } from '../closing-signal';
import { idParams, problemResponse } from '../schemas';
import { capabilitiesSchema } from './integration-schemas';
import type { IntegrationRoutesOptions } from './route-deps';

/** GET /v1/integrations/:id/capabilities: what the server offers, as a worker lists it. */
export const integrationCapabilityRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  const closing = closingSignal(app);
  const workerDeps = { db: opts.db, client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.capabilitiesWaitMs };

  app.get('/integrations/:id/capabilities', {
    schema: {
      tags: ['integrations'], summary: "List the server's tools, resources, templates and prompts (asks a worker)", params: idParams,
      response: {
        200: capabilitiesSchema, 404: problemResponse('No such integration'),
        409: problemResponse('The server needs OAuth authorization: POST /v1/integrations/{id}/authorize'),
        502: problemResponse('The MCP server is unreachable'), 504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request, reply) => integrationCapabilities(
    { ...workerDeps, callerGone: callerGoneSignal(reply, closing) }, request.caller, request.params.id,
  ));
};
