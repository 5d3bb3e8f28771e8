import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { importIntegrations } from '../../use-cases/integrations/import-integrations';
import { importIntegrationsRequest } from '../../use-cases/integrations/integration-requests';
import { problemResponse } from '../schemas';
import { integrationListSchema } from './integration-schemas';
import type { IntegrationRoutesOptions } from './route-deps';

const NEEDS_ADMIN = "Stdio servers, variables, admin-only settings and names the operator's files refer to need the admin key";

/** POST /v1/integrations/import: a Claude Desktop or VS Code server list, all or nothing. */
export const integrationImportRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  app.post('/integrations/import', {
    config: { role: 'manage' },
    schema: {
      tags: ['integrations'], summary: 'Import a Claude Desktop or VS Code MCP server list, all or nothing',
      body: importIntegrationsRequest,
      response: {
        201: integrationListSchema,
        400: problemResponse('Invalid document, or a variable not set'),
        403: problemResponse(NEEDS_ADMIN), 409: problemResponse('Names already taken'),
      },
    },
  }, async (request, reply) => {
    const created = await importIntegrations(opts, request.caller, request.body);
    request.log.info({ count: created.length, names: created.map((i) => i.name) }, 'integrations imported');
    return reply.code(201).send({ integrations: created });
  });
};
