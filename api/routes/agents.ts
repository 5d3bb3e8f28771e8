import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  agentDisabledText, findAgentByRef, insertAgent, isUniqueViolation, listAgents, removeAgent, updateAgent,
  type Agent, type AgentChanges, type NewAgent,
} from '../../store/agents';
import { inTransaction, type Db, type Queryable } from '../../store/pool';
import { resolveRefs } from '../../store/refs';
import { runningRunOfAgent } from '../../use-cases/runs/agent-runs';
import type { ModelConfig } from '../../core/agent-model';
import { apiKeyEnvProblem } from '../../core/llm-keys';
import type { OperatorNames } from '../../platform/operator-names';
import type { AdminPolicy } from '../auth';
import { requireAdminForName } from '../../use-cases/caller';
import { DEFAULT_CONTEXT_PREVIEW_WAIT_MS, previewContext } from '../../use-cases/worker-questions';
import { HttpProblem } from '../../use-cases/problem';
import { changeAgentRequest, createAgentRequest } from '../../use-cases/agents/agent-requests';
import { idParams, jsonResponse, problemResponse } from '../schemas';
import { agentContextSchema, agentListSchema, agentSchema } from './agent-schemas';

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

export const agentRoutes: FastifyPluginAsyncZod<AgentRouteDeps> = async (app, { db, client, taskQueue, contextWaitMs, admin, operatorNames, llmKeyEnvs }) => {
  const requireAdminForNameOf = (request: FastifyRequest, name: string, field: string) =>
    requireAdminForName(admin.caller(request), operatorNames, { kind: 'agent', name, field });

  /** A model as the API may store it: a key variable the operator allowed, and an endpoint only the operator may choose. */
  const checkedModel = (request: FastifyRequest, model: ModelConfig): ModelConfig => {
    const refused = apiKeyEnvProblem(model, llmKeyEnvs);
    if (refused) throw new HttpProblem(400, `body.model.${refused}`, 'validation');
    // Where requests go and which key they carry is the operator's decision: a key sent elsewhere is a key given away.
    const decisive = endpointFields(model);
    if (decisive.length > 0) admin.caller(request).requireAdmin(decisive.map((f) => `body.model.${f}`).join(', '));
    return model;
  };

  app.post('/agents', {
    schema: {
      tags: ['agents'], summary: 'Create an agent', body: createAgentRequest,
      response: {
        201: agentSchema, 400: problemResponse('Invalid request'),
        403: problemResponse("model.baseUrl, model.apiKeyEnv and a name the operator's files refer to need the admin key"), 409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => {
    requireAdminForNameOf(request, request.body.name, 'body.name');
    const model = checkedModel(request, request.body.model);
    try {
      return reply.code(201).send(await insertAgentWithIntegrations(db, { ...request.body, model }));
    } catch (err) {
      if (isUniqueViolation(err)) throw new HttpProblem(409, `An agent named ${request.body.name} already exists`, 'conflict');
      throw err;
    }
  });

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
  }, async (request) => mustFindAgent(db, request.params.id));

  app.patch('/agents/:id', {
    schema: {
      tags: ['agents'], summary: 'Change an agent (by id or name): only the fields given', params: idParams, body: changeAgentRequest,
      response: {
        200: agentSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such agent'),
        403: problemResponse("model.baseUrl, model.apiKeyEnv and a name the operator's files refer to need the admin key"),
        409: problemResponse('The name is taken (conflict), a run of the agent is running (agent_busy), the agent is defined by a file (defined_by_file), or it was deleted (agent_disabled)'),
      },
    },
  }, async (request) => {
    const agent = await mustBeChangeable({ db, client }, request.params.id, 'edit');
    if (agent.disabledAt) throw new HttpProblem(409, agentDisabledText(agent), 'agent_disabled');
    if (request.body.name !== undefined && request.body.name !== agent.name) {
      for (const name of [agent.name, request.body.name]) requireAdminForNameOf(request, name, 'body.name');
    }
    const { model, ...rest } = request.body;
    const changes = { ...rest, ...(model === undefined ? {} : { model: checkedModel(request, model) }) };
    try {
      return await inTransaction(db, async (tx) => {
        if (changes.integrationIds) changes.integrationIds = await lockIntegrations(tx, changes.integrationIds);
        return (await updateAgent(tx, agent.id, changes as AgentChanges))!;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new HttpProblem(409, `An agent named ${request.body.name} already exists`, 'conflict');
      throw err;
    }
  });

  app.delete('/agents/:id', {
    schema: {
      tags: ['agents'],
      summary: 'Delete an agent (by id or name). While threads or runs refer to it, it is disabled instead: kept readable, closed to new threads and runs',
      params: idParams,
      response: {
        200: jsonResponse('The agent was disabled (disabledAt is set), not deleted', agentSchema),
        204: z.null().describe('The agent was deleted'),
        403: problemResponse("Deleting an agent the operator's files refer to needs the admin key"), 404: problemResponse('No such agent'),
        409: problemResponse('A run of the agent is running (agent_busy), or the agent is defined by a file (defined_by_file)'),
      },
    },
  }, async (request, reply) => {
    const agent = await mustBeChangeable({ db, client }, request.params.id, 'delete');
    requireAdminForNameOf(request, agent.name, `agent ${agent.name}`);
    const outcome = await removeAgent(db, agent.id);
    if (outcome === 'removed') return reply.code(204).send(null);
    return mustFindAgent(db, agent.id);
  });

  app.get('/agents/:id/context', {
    schema: {
      tags: ['agents'],
      summary: 'Preview the prefix injected before the conversation (instructions and conventional MCP prompts), without starting a run',
      params: idParams,
      response: {
        200: agentContextSchema,
        404: problemResponse('No such agent'),
        502: problemResponse('A worker could not build the context'),
        504: problemResponse('No worker answered in time'),
      },
    },
  }, async (request) => {
    const agent = await mustFindAgent(db, request.params.id);
    const waitMs = contextWaitMs ?? DEFAULT_CONTEXT_PREVIEW_WAIT_MS;
    return previewContext({ client, taskQueue, logger: request.log, waitMs }, agent.id);
  });
};

function endpointFields(model: ModelConfig): string[] {
  if (model.provider === 'scripted') return [];
  return (['baseUrl', 'apiKeyEnv'] as const).filter((f) => model[f] !== undefined);
}

async function mustFindAgent(db: Db, ref: string): Promise<Agent> {
  const agent = await findAgentByRef(db, ref);
  if (!agent) throw new HttpProblem(404, `Agent ${ref} does not exist`, 'not_found');
  return agent;
}

/** An agent the API may change: not defined by a file, and with no run running (runs read their agent at every turn). */
async function mustBeChangeable(deps: { db: Db; client: Client }, ref: string, verb: 'edit' | 'delete'): Promise<Agent> {
  const agent = await mustFindAgent(deps.db, ref);
  if (agent.sourceFile) {
    throw new HttpProblem(409, `Agent ${agent.name} is defined by the file ${agent.sourceFile}: ${verb} the file instead`, 'defined_by_file');
  }
  const running = await runningRunOfAgent(deps, agent.id);
  if (running) throw new HttpProblem(409, `Agent ${agent.name} has a running run ${running}: wait for it to end or cancel it first`, 'agent_busy');
  return agent;
}

/**
 * Integration ids or names to ids; unknown ones are a 400 naming them. The key-share lock keeps the
 * integrations from being deleted before the agent is stored (DELETE /integrations/:id refuses while agents use one).
 */
async function lockIntegrations(tx: Queryable, refs: string[]): Promise<string[]> {
  const { ids, unknown } = await resolveRefs(tx, 'integrations', refs, { lockForKeyShare: true });
  if (unknown.length > 0) throw new HttpProblem(400, `Unknown integrationIds: ${unknown.join(', ')}`, 'validation');
  return ids;
}

async function insertAgentWithIntegrations(db: Db, agent: NewAgent): Promise<Agent> {
  return inTransaction(db, async (tx) => insertAgent(tx, { ...agent, integrationIds: await lockIntegrations(tx, agent.integrationIds ?? []) }));
}
