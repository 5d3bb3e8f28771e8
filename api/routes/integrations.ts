import type { Client } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { toPublic } from '../../store/integrations/integrations';
import type { Db } from '../../store/pool';
import type { Logger } from '../../platform/logger';
import type { OperatorNames } from '../../platform/operator-names';
import type { AdminPolicy } from '../auth';
import { changeIntegration } from '../../use-cases/integrations/change-integration';
import { createIntegration } from '../../use-cases/integrations/create-integration';
import { deleteIntegration } from '../../use-cases/integrations/delete-integration';
import { importIntegrations } from '../../use-cases/integrations/import-integrations';
import { integrationCapabilities } from '../../use-cases/integrations/integration-capabilities';
import {
  changeIntegrationRequest, createIntegrationRequest, importIntegrationsRequest,
} from '../../use-cases/integrations/integration-requests';
import { integrationView, listIntegrationViews, loadIntegration } from '../../use-cases/integrations/integrations';
import type { Environment } from '../../use-cases/integrations/mcp-config-import';
import { callerGoneSignal, closingSignal } from '../closing-signal';
import { idParams, jsonResponse, problemResponse } from '../schemas';
import { capabilitiesSchema, integrationListSchema, integrationSchema } from './integration-schemas';

export interface IntegrationRoutesOptions {
  db: Db;
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** who may create stdio servers, change what runs or where secrets go, and expand variables */
  admin: AdminPolicy;
  /** names the operator's files refer to: taking or freeing one is the operator's act */
  operatorNames: OperatorNames;
  /** where `${VAR}` in imported documents is looked up; the composition root passes process.env */
  env: Environment;
  /** how long GET …/capabilities waits for a worker */
  capabilitiesWaitMs: number;
}

export const integrationRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  const { db, admin } = opts;
  const closing = closingSignal(app);
  const workerDeps = { db, client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.capabilitiesWaitMs };

  app.post('/integrations', {
    schema: {
      tags: ['integrations'], summary: 'Register an MCP server', body: createIntegrationRequest,
      response: {
        201: integrationSchema, 400: problemResponse('Invalid request'),
        403: problemResponse("A stdio server, an admin-only setting, or a name the operator's files refer to needs the admin key"), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await createIntegration(opts, admin.caller(request), request.body)));

  app.get('/integrations', {
    schema: { tags: ['integrations'], summary: 'List integrations, oldest first', response: { 200: integrationListSchema } },
  }, async () => ({ integrations: await listIntegrationViews(db) }));

  app.get('/integrations/:id', {
    schema: {
      tags: ['integrations'], summary: 'Read an integration (by id or name)', params: idParams,
      response: { 200: jsonResponse('The integration', integrationSchema), 404: problemResponse('No such integration') },
    },
  }, async (request) => integrationView(db, await loadIntegration(db, request.params.id)));

  app.patch('/integrations/:id', {
    schema: {
      tags: ['integrations'], summary: 'Change an integration; workers reconnect with the new settings', params: idParams, body: changeIntegrationRequest,
      response: {
        200: jsonResponse('The changed integration', integrationSchema), 400: problemResponse('Invalid request'),
        403: problemResponse('Changing what runs, the URL, the OAuth client (transport.auth), the name or an admin-only setting needs the admin key'),
        404: problemResponse('No such integration'), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request) => changeIntegration(opts, admin.caller(request), request.params.id, request.body));

  app.delete('/integrations/:id', {
    schema: {
      tags: ['integrations'], summary: 'Delete an integration (by id or name) no agent uses', params: idParams,
      response: {
        204: z.null().describe('Deleted'), 404: problemResponse('No such integration'),
        403: problemResponse("Deleting an integration the operator's files refer to needs the admin key"),
        409: problemResponse('Agents still use it: remove it from them first'),
      },
    },
  }, async (request, reply) => {
    await deleteIntegration(opts, admin.caller(request), request.params.id);
    return reply.code(204).send(null);
  });

  app.post('/integrations/import', {
    schema: {
      tags: ['integrations'], summary: 'Import a Claude Desktop or VS Code MCP server list, all or nothing', body: importIntegrationsRequest,
      response: {
        201: integrationListSchema,
        400: problemResponse('Invalid document, or a variable not set'),
        403: problemResponse("Stdio servers, variables, admin-only settings and names the operator's files refer to need the admin key"), 409: problemResponse('Names already taken'),
      },
    },
  }, async (request, reply) => {
    const created = await importIntegrations(opts, admin.caller(request), request.body);
    request.log.info({ count: created.length, names: created.map((i) => i.name) }, 'integrations imported');
    return reply.code(201).send({ integrations: created.map(toPublic) });
  });

  app.get('/integrations/:id/capabilities', {
    schema: {
      tags: ['integrations'], summary: "List the server's tools, resources, templates and prompts (asks a worker)", params: idParams,
      response: {
        200: capabilitiesSchema, 404: problemResponse('No such integration'),
        409: problemResponse('The server needs OAuth authorization: POST /v1/integrations/{id}/authorize'),
        502: problemResponse('The MCP server is unreachable'), 504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request, reply) => integrationCapabilities({ ...workerDeps, callerGone: callerGoneSignal(reply, closing) }, request.params.id));
};
