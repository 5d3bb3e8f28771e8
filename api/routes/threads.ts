import type { FastifyPluginAsync } from 'fastify';
import { findAgent } from '../../core/db/agents';
import type { Db } from '../../core/db/pool';
import { findThread, insertThread } from '../../core/db/threads';
import { HttpProblem } from '../problem';
import { createThreadBody, idParams, problemResponse, ref } from '../schemas';

export const threadRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.post<{ Body: { agentId: string } }>('/threads', {
    schema: {
      tags: ['threads'], summary: 'Create a thread for an agent', body: createThreadBody,
      response: { 201: ref('Thread'), 400: problemResponse('Invalid request'), 404: problemResponse('No such agent') },
    },
  }, async (request, reply) => {
    const { agentId } = request.body;
    if (!(await findAgent(db, agentId))) throw new HttpProblem(404, `Agent ${agentId} does not exist`, 'not_found');
    return reply.code(201).send(await insertThread(db, agentId));
  });

  app.get<{ Params: { id: string } }>('/threads/:id', {
    schema: {
      tags: ['threads'], summary: 'Read a thread', params: idParams,
      response: { 200: ref('Thread'), 404: problemResponse('No such thread') },
    },
  }, async (request) => {
    const thread = await findThread(db, request.params.id);
    if (!thread) throw new HttpProblem(404, `Thread ${request.params.id} does not exist`, 'not_found');
    return thread;
  });
};
