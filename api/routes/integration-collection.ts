import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { createIntegration } from '../../use-cases/integrations/create-integration';
import { createIntegrationRequest } from '../../use-cases/integrations/integration-requests';
import { listIntegrationViews } from '../../use-cases/integrations/integrations';
import { problemResponse } from '../schemas';
import { integrationListSchema, integrationSchema } from './integration-schemas';
import type { IntegrationRoutesOptions } from './route-deps';

const NEEDS_ADMIN = "A stdio server, an admin-only setting, or a name the operator's files refer to needs the admin key";

/** POST and GET /v1/integrations. */
export const integrationCollectionRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  app.post('/integrations', {
    config: { role: 'manage' },
    schema: {
      tags: ['integrations'], summary: 'Register an MCP server', body: createIntegrationRequest,
      response: {
        201: integrationSchema, 400: problemResponse('Invalid request'),
        403: problemResponse(NEEDS_ADMIN), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await createIntegration(opts, request.caller, request.body)));

  app.get('/integrations', {
    schema: { tags: ['integrations'], summary: 'List integrations, oldest first', response: { 200: integrationListSchema } },
  }, async (request) => ({ integrations: await listIntegrationViews(opts.db, request.caller.tenantId) }));
};
