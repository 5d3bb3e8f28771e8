import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { createThread, listThreadsOf, type ThreadDeps } from '../../use-cases/threads/threads';
import { problemResponse } from '../schemas';
import { createThreadBody, threadPageSchema, threadSchema, threadsQuery } from './thread-schemas';

/** POST and GET /v1/threads. */
export const threadCollectionRoutes: FastifyPluginAsyncZod<ThreadDeps> = async (app, { db }) => {
  app.post('/threads', {
    schema: {
      tags: ['threads'], summary: 'Create a thread for an agent (by id or name)', body: createThreadBody,
      response: {
        201: threadSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such agent'),
        409: problemResponse('The agent was deleted (agent_disabled)'),
      },
    },
  }, async (request, reply) => {
    const { tenantId } = request.caller;
    const thread = await createThread(db, { tenantId, agentRef: request.body.agentId, metadata: request.body.metadata });
    return reply.code(201).send(thread);
  });

  app.get('/threads', {
    schema: {
      tags: ['threads'], summary: 'List threads, newest first, optionally of one agent (by id or name)', querystring: threadsQuery,
      response: { 200: threadPageSchema, 400: problemResponse('Invalid cursor'), 404: problemResponse('No such agent') },
    },
  }, async (request) => {
    const { agentId: agentRef, ...page } = request.query;
    return listThreadsOf(db, { ...page, tenantId: request.caller.tenantId, agentRef });
  });
};
