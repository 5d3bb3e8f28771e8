import type { FastifyPluginAsync } from 'fastify';
import { findAgent, insertAgent, isUniqueViolation, listAgents } from '../../core/db/agents';
import type { Db } from '../../core/db/pool';
import { parseModel } from '../validation';
import { HttpProblem } from '../problem';
import { createAgentBody, idParams, problemResponse, ref, type CreateAgentBody } from '../schemas';

export const agentRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.post<{ Body: CreateAgentBody }>('/agents', {
    schema: {
      tags: ['agents'], summary: 'Create an agent', body: createAgentBody,
      response: { 201: ref('Agent'), 400: problemResponse('Invalid request'), 409: problemResponse('The name is taken') },
    },
  }, async (request, reply) => {
    const model = parseModel(request.body.model);
    try {
      return reply.code(201).send(await insertAgent(db, { ...request.body, model }));
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
};
