import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { isUniqueViolation } from '../../store/agents';
import { deleteUnreferencedIntegration, findIntegration, insertIntegration, listIntegrations, takenIntegrationNames, toPublic, updateIntegration } from '../../store/integrations/integrations';
import type { Integration } from '../../core/integration';
import { authorizationView, authorizationViews } from '../../store/integrations/oauth';
import { inTransaction, type Db } from '../../store/pool';
import { resolveRef } from '../../store/refs';
import type { Logger } from '../../platform/logger';
import type { OperatorNames } from '../../platform/operator-names';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requireAdminForName, type AdminPolicy } from '../auth';
import { adminFieldsChanged, adminSettingsChanged } from '../../use-cases/integrations/integration-admin';
import { elicitationTimeoutMs, patchTransport } from '../../use-cases/integrations/integration-input';
import {
  changeIntegrationRequest, createIntegrationRequest, importIntegrationsRequest,
} from '../../use-cases/integrations/integration-requests';
import { fetchCapabilities } from '../../use-cases/worker-questions';
import { readMcpConfig, type Environment } from '../../use-cases/integrations/mcp-config-import';
import { HttpProblem } from '../../use-cases/problem';
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

/** `elicitationTimeout` as stored (ms); the request's schema has checked it. */
function storedSettings<T extends { elicitationTimeout?: string }>(body: T): Omit<T, 'elicitationTimeout'> & { elicitationTimeoutMs?: number } {
  const { elicitationTimeout, ...rest } = body;
  const ms = elicitationTimeout === undefined ? undefined : elicitationTimeoutMs(elicitationTimeout);
  return { ...rest, ...(ms !== undefined ? { elicitationTimeoutMs: ms } : {}) };
}

const SETTINGS_ELSEWHERE = "these settings can also be given in the operator's INTEGRATIONS_FILE";

const STDIO_ELSEWHERE = "stdio servers can also be listed in the operator's INTEGRATIONS_FILE";

const RENAME_REASON = 'agent files and INTEGRATIONS_FILE find integrations by name, so renaming one changes what they find';

/** A unique violation can only be the name: the ids are random. */
function nameConflict(names: string[]): HttpProblem {
  return new HttpProblem(409, `An integration named ${names.join(', ')} already exists`, 'conflict');
}

/** By id or by name. */
async function mustFind(db: Db, ref: string): Promise<Integration> {
  const id = await resolveRef(db, 'integrations', ref);
  const integration = id === undefined ? undefined : await findIntegration(db, id);
  if (!integration) throw new HttpProblem(404, `Integration ${ref} does not exist`, 'not_found');
  return integration;
}

/** The public integration with its OAuth state (never a token). */
async function present(db: Db, integration: Integration) {
  return { ...toPublic(integration), ...(await authorizationView(db, integration)) };
}


export const integrationRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  const { db } = opts;
  /** One 403 naming every admin-only setting of the request (integration-admin.ts) that it would change. */
  const requireAdminSettings = (request: FastifyRequest, fields: string[]) => {
    if (fields.length > 0) opts.admin.requireAdmin(request, fields.join(', '), SETTINGS_ELSEWHERE);
  };
  const requireAdminForNameOf = (request: FastifyRequest, name: string, field: string) =>
    requireAdminForName(opts.admin, opts.operatorNames, request, { kind: 'integration', name, field });

  app.post('/integrations', {
    schema: {
      tags: ['integrations'], summary: 'Register an MCP server', body: createIntegrationRequest,
      response: {
        201: integrationSchema, 400: problemResponse('Invalid request'),
        403: problemResponse("A stdio server, an admin-only setting, or a name the operator's files refer to needs the admin key"), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => {
    requireAdminForNameOf(request, request.body.name, 'body.name');
    const { transport, ...settings } = storedSettings(request.body);
    // A stdio server is a command a worker runs: only the operator decides that.
    if (transport.type === 'stdio') opts.admin.requireAdmin(request, 'body.transport.type (stdio)', STDIO_ELSEWHERE);
    requireAdminSettings(request, adminSettingsChanged(settings).map((f) => `body.${f}`));
    try {
      return reply.code(201).send(await present(db, await insertIntegration(db, { ...settings, transport })));
    } catch (err) {
      if (isUniqueViolation(err)) throw nameConflict([request.body.name]);
      throw err;
    }
  });

  app.get('/integrations', {
    schema: { tags: ['integrations'], summary: 'List integrations, oldest first', response: { 200: integrationListSchema } },
  }, async () => {
    const integrations = await listIntegrations(db);
    const views = await authorizationViews(db, integrations);
    return { integrations: integrations.map((i) => ({ ...toPublic(i), ...views.get(i.id) })) };
  });

  app.get('/integrations/:id', {
    schema: {
      tags: ['integrations'], summary: 'Read an integration (by id or name)', params: idParams,
      response: { 200: jsonResponse('The integration', integrationSchema), 404: problemResponse('No such integration') },
    },
  }, async (request) => present(db, await mustFind(db, request.params.id)));

  app.patch('/integrations/:id', {
    schema: {
      tags: ['integrations'], summary: 'Change an integration; workers reconnect with the new settings', params: idParams, body: changeIntegrationRequest,
      response: {
        200: jsonResponse('The changed integration', integrationSchema), 400: problemResponse('Invalid request'), 403: problemResponse('Changing what runs, the URL, the name or an admin-only setting needs the admin key'),
        404: problemResponse('No such integration'), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request) => {
    const { transport: transportPatch, ...rest } = storedSettings(request.body);
    const current = await mustFind(db, request.params.id);
    // Agents, agent files and INTEGRATIONS_FILE find integrations by name: a new name changes what they find.
    if (rest.name !== undefined && rest.name !== current.name) opts.admin.requireAdmin(request, 'body.name', RENAME_REASON);
    const transport = transportPatch && patchTransport(current.transport, transportPatch);
    const decisive = transport ? adminFieldsChanged(current.transport, transport) : [];
    if (decisive.length > 0) opts.admin.requireAdmin(request, decisive.map((f) => `body.transport.${f}`).join(', '));
    requireAdminSettings(request, adminSettingsChanged(rest, current).map((f) => `body.${f}`));
    try {
      const updated = await updateIntegration(db, current.id, { ...rest, ...(transport ? { transport } : {}) });
      if (!updated) throw new HttpProblem(404, `Integration ${current.id} does not exist`, 'not_found');
      return await present(db, updated);
    } catch (err) {
      if (isUniqueViolation(err)) throw nameConflict([rest.name ?? current.name]);
      throw err;
    }
  });

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
    const { id, name } = await mustFind(db, request.params.id);
    requireAdminForNameOf(request, name, `integration ${name}`);
    const outcome = await inTransaction(db, (tx) => deleteUnreferencedIntegration(tx, id));
    if (outcome.status === 'not_found') throw new HttpProblem(404, `Integration ${request.params.id} does not exist`, 'not_found');
    if (outcome.status === 'referenced') {
      const agents = outcome.agents.map((a) => `${a.name} (${a.id})`).join(', ');
      throw new HttpProblem(409, `Integration ${request.params.id} is used by agents ${agents}: remove it from them first`, 'in_use');
    }
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
    const servers = readMcpConfig(request.body, { env: opts.env, authorizeExpansion: (field) => opts.admin.requireAdmin(request, field) });
    const stdio = servers.filter((s) => s.transport.type === 'stdio').map((s) => s.name);
    if (stdio.length > 0) opts.admin.requireAdmin(request, `stdio servers ${stdio.join(', ')}`, STDIO_ELSEWHERE);
    // readMcpConfig has checked that the document has exactly one of them.
    const list = request.body.mcpServers !== undefined ? 'mcpServers' : 'servers';
    for (const { name } of servers) requireAdminForNameOf(request, name, `body.${list}.${name}`);
    requireAdminSettings(request, servers.flatMap((s) => adminSettingsChanged(s).map((f) => `body.${list}.${s.name}.${f}`)));
    const names = servers.map((s) => s.name);
    try {
      const created = await inTransaction(db, async (tx) => {
        const taken = await takenIntegrationNames(tx, names);
        if (taken.length > 0) throw nameConflict(taken);
        const inserted: Integration[] = [];
        for (const server of servers) inserted.push(await insertIntegration(tx, server));
        return inserted;
      });
      request.log.info({ count: created.length, names }, 'integrations imported');
      return reply.code(201).send({ integrations: created.map(toPublic) });
    } catch (err) {
      // Another request took one of the names between the check and the insert.
      if (isUniqueViolation(err)) throw nameConflict(await takenIntegrationNames(db, names));
      throw err;
    }
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
  }, async (request) => {
    const integration = await mustFind(db, request.params.id);
    try {
      const listed = await fetchCapabilities({ client: opts.client, taskQueue: opts.taskQueue, logger: opts.logger, waitMs: opts.capabilitiesWaitMs }, integration);
      return { ...(await authorizationView(db, integration)), ...listed };
    } catch (err) {
      if (!(err instanceof HttpProblem) || err.status !== 502) throw err;
      // The worker may just have learnt that the server wants authorization (a 401 with resource metadata).
      const view = await authorizationView(db, integration);
      if (view.authorization !== 'required' && view.authorization !== 'expired') throw err;
      throw new HttpProblem(409, `Integration ${integration.name} needs authorization; an operator must authorize it (POST /v1/integrations/${integration.id}/authorize)`,
        'authorization_required', { ...view });
    }
  });
};
