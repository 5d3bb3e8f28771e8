import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { createAgentRequest } from '../../use-cases/agents/agent-requests';
import { listAgents } from '../../use-cases/agents/agents';
import { createAgent } from '../../use-cases/agents/create-agent';
// After the shapes the requests name, before the Agent: /docs lists its components in the order they are declared.
import { problemResponse } from '../schemas';
import { agentSchema } from '../../core/agent';
import { agentListSchema } from './agent-schemas';
import type { AgentRouteDeps } from './route-deps';

const NEEDS_ADMIN = "model.baseUrl, model.apiKeyEnv and a name the operator's files refer to need the admin key";

/** POST and GET /v1/agents. */
export const agentCollectionRoutes: FastifyPluginAsyncZod<AgentRouteDeps> = async (app, deps) => {
  app.post('/agents', {
    config: { role: 'manage' },
    schema: {
      tags: ['agents'], summary: 'Create an agent', body: createAgentRequest,
      response: {
        201: agentSchema, 400: problemResponse('Invalid request'),
        403: problemResponse(NEEDS_ADMIN), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await createAgent(deps, request.caller, request.body)));

  app.get('/agents', {
    schema: {
      tags: ['agents'], summary: 'List agents, oldest first (deleted agents kept for their threads are left out)',
      response: { 200: agentListSchema },
    },
  }, async (request) => ({ agents: await listAgents(deps.db, request.caller.tenantId) }));
};
