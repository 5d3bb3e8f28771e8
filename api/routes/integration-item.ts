import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { changeIntegration } from '../../use-cases/integrations/change-integration';
import { deleteIntegration } from '../../use-cases/integrations/delete-integration';
import { changeIntegrationRequest } from '../../use-cases/integrations/integration-requests';
import { integrationView, loadIntegration } from '../../use-cases/integrations/integrations';
import { idParams, jsonResponse, problemResponse } from '../schemas';
import { integrationSchema } from './integration-schemas';
import type { IntegrationRoutesOptions } from './route-deps';

const CHANGE_NEEDS_ADMIN = 'Changing what runs, the URL, the OAuth client (transport.auth), the name or an admin-only setting '
  + 'needs the admin key';

/** GET, PATCH and DELETE /v1/integrations/:id (an id or a name). */
export const integrationItemRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  app.get('/integrations/:id', {
    schema: {
      tags: ['integrations'], summary: 'Read an integration (by id or name)', params: idParams,
      response: { 200: jsonResponse('The integration', integrationSchema), 404: problemResponse('No such integration') },
    },
  }, async (request) => integrationView(opts.db, await loadIntegration(opts.db, request.caller.tenantId, request.params.id)));

  app.patch('/integrations/:id', {
    config: { role: 'manage' },
    schema: {
      tags: ['integrations'], summary: 'Change an integration; workers reconnect with the new settings',
      params: idParams, body: changeIntegrationRequest,
      response: {
        200: jsonResponse('The changed integration', integrationSchema), 400: problemResponse('Invalid request'),
        403: problemResponse(CHANGE_NEEDS_ADMIN),
        404: problemResponse('No such integration'), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request) => changeIntegration(opts, request.caller, request.params.id, request.body));

  app.delete('/integrations/:id', {
    config: { role: 'manage' },
    schema: {
      tags: ['integrations'], summary: 'Delete an integration (by id or name) no agent uses', params: idParams,
      response: {
        204: z.null().describe('Deleted'), 404: problemResponse('No such integration'),
        403: problemResponse("Deleting an integration the operator's files refer to needs the admin key"),
        409: problemResponse('Agents still use it: remove it from them first'),
      },
    },
  }, async (request, reply) => {
    await deleteIntegration(opts, request.caller, request.params.id);
    return reply.code(204).send(null);
  });
};
