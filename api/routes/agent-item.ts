import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentSchema } from '../../core/agent';
import { changeAgentRequest } from '../../use-cases/agents/agent-requests';
import { loadAgent } from '../../use-cases/agents/agents';
import { changeAgent } from '../../use-cases/agents/change-agent';
import { deleteAgent } from '../../use-cases/agents/delete-agent';
import { idParams, jsonResponse, problemResponse } from '../schemas';
import type { AgentRouteDeps } from './route-deps';

const CHANGE_CONFLICTS = 'The name is taken (conflict), a run of the agent is running (agent_busy), the agent is defined by a file '
  + '(defined_by_file), it was deleted (agent_disabled), or its subAgents would close a cycle (sub_agent_cycle)';
const DELETE_CONFLICTS = 'A run of the agent is running (agent_busy), the agent is defined by a file (defined_by_file), '
  + 'or other agents list it as a sub-agent (agent_in_use)';

/** GET, PATCH and DELETE /v1/agents/:id (an id or a name). */
export const agentItemRoutes: FastifyPluginAsyncZod<AgentRouteDeps> = async (app, deps) => {
  app.get('/agents/:id', {
    schema: {
      tags: ['agents'], summary: 'Read an agent (by id or name)', params: idParams,
      response: { 200: agentSchema, 404: problemResponse('No such agent') },
    },
  }, async (request) => loadAgent(deps.db, request.caller.tenantId, request.params.id));

  app.patch('/agents/:id', {
    config: { role: 'manage' },
    schema: {
      tags: ['agents'], summary: 'Change an agent (by id or name): only the fields given', params: idParams, body: changeAgentRequest,
      response: {
        200: agentSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such agent'),
        403: problemResponse("model.baseUrl, model.apiKeyEnv and a name the operator's files refer to need the admin key"),
        409: problemResponse(CHANGE_CONFLICTS),
      },
    },
  }, async (request) => changeAgent(deps, request.caller, request.params.id, request.body));

  app.delete('/agents/:id', {
    config: { role: 'manage' },
    schema: {
      tags: ['agents'],
      summary: 'Delete an agent (by id or name). While threads or runs refer to it, it is disabled instead: '
        + 'kept readable, closed to new threads and runs',
      params: idParams,
      response: {
        200: jsonResponse('The agent was disabled (disabledAt is set), not deleted', agentSchema),
        204: z.null().describe('The agent was deleted'),
        403: problemResponse("Deleting an agent the operator's files refer to needs the admin key"), 404: problemResponse('No such agent'),
        409: problemResponse(DELETE_CONFLICTS),
      },
    },
  }, async (request, reply) => {
    const disabled = await deleteAgent(deps, request.caller, request.params.id);
    return disabled ?? reply.code(204).send(null);
  });
};
