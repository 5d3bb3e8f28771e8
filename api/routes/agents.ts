import type { Client } from '@temporalio/client';
import type { FastifyPluginAsync } from 'fastify';
import { findAgent, insertAgent, isUniqueViolation, listAgents, type Agent, type NewAgent } from '../../core/db/agents';
import { lockIntegrationIds } from '../../core/db/integrations';
import { inTransaction, type Db } from '../../core/db/pool';
import { parseModel } from '../validation';
import { DEFAULT_CONTEXT_PREVIEW_WAIT_MS, previewContext } from '../context-preview';
import { HttpProblem } from '../problem';
import { createAgentBody, idParams, problemResponse, ref, type CreateAgentBody } from '../schemas';

export interface AgentRouteDeps {
  db: Db;
  client: Client;
  taskQueue: string;
  /** bound on GET /agents/:id/context's wait for a worker */
  contextWaitMs?: number;
}

const contextMessage = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] },
    content: { type: 'string' },
    toolCalls: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'name', 'arguments'],
        properties: { id: { type: 'string' }, name: { type: 'string' }, arguments: { type: 'object', additionalProperties: true } },
      },
    },
    toolCallId: { type: 'string' },
  },
} as const;

export const agentRoutes: FastifyPluginAsync<AgentRouteDeps> = async (app, { db, client, taskQueue, contextWaitMs }) => {
  app.post<{ Body: CreateAgentBody }>('/agents', {
    schema: {
      tags: ['agents'], summary: 'Create an agent', body: createAgentBody,
      response: { 201: ref('Agent'), 400: problemResponse('Invalid request'), 409: problemResponse('The name is taken') },
    },
  }, async (request, reply) => {
    const model = parseModel(request.body.model);
    try {
      return reply.code(201).send(await insertAgentWithIntegrations(db, { ...request.body, model }));
    } catch (err) {
      if (isUniqueViolation(err)) throw new HttpProblem(409, `An agent named ${request.body.name} already exists`, 'conflict');
      throw err;
    }
  });

  app.get('/agents', {
    schema: {
      tags: ['agents'], summary: 'List agents, oldest first',
      response: { 200: { type: 'object', required: ['agents'], properties: { agents: { type: 'array', items: ref('Agent') } } } },
    },
  }, async () => ({ agents: await listAgents(db) }));

  app.get<{ Params: { id: string } }>('/agents/:id', {
    schema: {
      tags: ['agents'], summary: 'Read an agent', params: idParams,
      response: { 200: ref('Agent'), 404: problemResponse('No such agent') },
    },
  }, async (request) => {
    const agent = await findAgent(db, request.params.id);
    if (!agent) throw new HttpProblem(404, `Agent ${request.params.id} does not exist`, 'not_found');
    return agent;
  });

  app.get<{ Params: { id: string } }>('/agents/:id/context', {
    schema: {
      tags: ['agents'],
      summary: 'Preview the prefix injected before the conversation (instructions and conventional MCP prompts), without starting a run',
      params: idParams,
      response: {
        200: { type: 'object', required: ['messages'], properties: { messages: { type: 'array', items: contextMessage } } },
        404: problemResponse('No such agent'),
        502: problemResponse('A worker could not build the context'),
        504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request) => {
    if (!(await findAgent(db, request.params.id))) throw new HttpProblem(404, `Agent ${request.params.id} does not exist`, 'not_found');
    const waitMs = contextWaitMs ?? DEFAULT_CONTEXT_PREVIEW_WAIT_MS;
    return previewContext({ client, taskQueue, logger: request.log, waitMs }, request.params.id);
  });
};

/**
 * Unknown integration ids are a 400 naming them. The key-share lock keeps the integrations from
 * being deleted before the agent is stored (DELETE /integrations/:id refuses while agents use one).
 */
async function insertAgentWithIntegrations(db: Db, agent: NewAgent): Promise<Agent> {
  return inTransaction(db, async (tx) => {
    const missing = await lockIntegrationIds(tx, agent.integrationIds ?? []);
    if (missing.length > 0) throw new HttpProblem(400, `Unknown integrationIds: ${missing.join(', ')}`, 'validation');
    return insertAgent(tx, agent);
  });
}
