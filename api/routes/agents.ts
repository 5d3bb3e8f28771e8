import type { Client } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listAgents } from '../../store/agents';
import type { Db } from '../../store/pool';
import type { OperatorNames } from '../../platform/operator-names';
import type { AdminPolicy } from '../auth';
import { changeAgentRequest, createAgentRequest } from '../../use-cases/agents/agent-requests';
import { loadAgent } from '../../use-cases/agents/agents';
import { changeAgent } from '../../use-cases/agents/change-agent';
import { createAgent } from '../../use-cases/agents/create-agent';
import { deleteAgent } from '../../use-cases/agents/delete-agent';
import { DEFAULT_CONTEXT_PREVIEW_WAIT_MS, previewContext } from '../../use-cases/worker-questions';
import { callerGoneSignal, closingSignal } from '../closing-signal';
import { idParams, jsonResponse, problemResponse } from '../schemas';
import { agentSchema } from '../../core/agent';
import { agentContextSchema, agentListSchema, contextQuery } from './agent-schemas';
import { findThread } from '../../store/threads/threads';
import { EngineError } from '../../core/engine-error';

export interface AgentRouteDeps {
  db: Db;
  client: Client;
  taskQueue: string;
  /** who may point an agent at another LLM endpoint or key */
  admin: AdminPolicy;
  /** agent names the operator's files refer to: taking or freeing one is the operator's act */
  operatorNames: OperatorNames;
  /** the variables model.apiKeyEnv may name */
  llmKeyEnvs: readonly string[];
  /** bound on GET /agents/:id/context's wait for a worker */
  contextWaitMs?: number;
}

export const agentRoutes: FastifyPluginAsyncZod<AgentRouteDeps> = async (app, deps) => {
  const closing = closingSignal(app);
  const { db, client, taskQueue, contextWaitMs, admin } = deps;

  app.post('/agents', {
    schema: {
      tags: ['agents'], summary: 'Create an agent', body: createAgentRequest,
      response: {
        201: agentSchema, 400: problemResponse('Invalid request'),
        403: problemResponse("model.baseUrl, model.apiKeyEnv and a name the operator's files refer to need the admin key"), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await createAgent(deps, admin.caller(request), request.body)));

  app.get('/agents', {
    schema: {
      tags: ['agents'], summary: 'List agents, oldest first (deleted agents kept for their threads are left out)',
      response: { 200: agentListSchema },
    },
  }, async () => ({ agents: await listAgents(db) }));

  app.get('/agents/:id', {
    schema: {
      tags: ['agents'], summary: 'Read an agent (by id or name)', params: idParams,
      response: { 200: agentSchema, 404: problemResponse('No such agent') },
    },
  }, async (request) => loadAgent(db, request.params.id));

  app.patch('/agents/:id', {
    schema: {
      tags: ['agents'], summary: 'Change an agent (by id or name): only the fields given', params: idParams, body: changeAgentRequest,
      response: {
        200: agentSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such agent'),
        403: problemResponse("model.baseUrl, model.apiKeyEnv and a name the operator's files refer to need the admin key"),
        409: problemResponse('The name is taken (conflict), a run of the agent is running (agent_busy), the agent is defined by a file (defined_by_file), it was deleted (agent_disabled), or its subAgents would close a cycle (sub_agent_cycle)'),
      },
    },
  }, async (request) => changeAgent(deps, admin.caller(request), request.params.id, request.body));

  app.delete('/agents/:id', {
    schema: {
      tags: ['agents'],
      summary: 'Delete an agent (by id or name). While threads or runs refer to it, it is disabled instead: kept readable, closed to new threads and runs',
      params: idParams,
      response: {
        200: jsonResponse('The agent was disabled (disabledAt is set), not deleted', agentSchema),
        204: z.null().describe('The agent was deleted'),
        403: problemResponse("Deleting an agent the operator's files refer to needs the admin key"), 404: problemResponse('No such agent'),
        409: problemResponse('A run of the agent is running (agent_busy), the agent is defined by a file (defined_by_file), or other agents list it as a sub-agent (agent_in_use)'),
      },
    },
  }, async (request, reply) => {
    const disabled = await deleteAgent(deps, admin.caller(request), request.params.id);
    return disabled ?? reply.code(204).send(null);
  });

  app.get('/agents/:id/context', {
    schema: {
      tags: ['agents'],
      summary: 'Preview the prefix injected before the conversation (instructions and conventional MCP prompts), without starting a run',
      params: idParams, querystring: contextQuery,
      response: {
        200: agentContextSchema,
        400: problemResponse('Invalid request'),
        404: problemResponse('No such agent or thread'),
        502: problemResponse('A worker could not build the context'),
        504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request, reply) => {
    const agent = await loadAgent(db, request.params.id);
    const { threadId } = request.query;
    if (threadId !== undefined && !(await findThread(db, threadId))) throw new EngineError('not_found', `Thread ${threadId} does not exist`);
    const waitMs = contextWaitMs ?? DEFAULT_CONTEXT_PREVIEW_WAIT_MS;
    return previewContext({ client, taskQueue, logger: request.log, waitMs, callerGone: callerGoneSignal(reply, closing) }, agent.id, threadId);
  });
};
