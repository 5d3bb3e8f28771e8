import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { pageConversation, type ThreadDeps } from '../../use-cases/threads/threads';
import { idParams, problemResponse } from '../schemas';
import { messagePageSchema, messagesQuery } from './thread-schemas';

/** GET /v1/threads/:id/messages: the thread's conversation, page by page. */
export const threadMessageRoutes: FastifyPluginAsyncZod<ThreadDeps> = async (app, { db }) => {
  app.get('/threads/:id/messages', {
    schema: {
      tags: ['threads'],
      summary: 'Read a thread\'s conversation, oldest first: roles, tool calls and tool results; long texts are cut, with their full size',
      params: idParams, querystring: messagesQuery,
      response: { 200: messagePageSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such thread') },
    },
  }, async (request) => pageConversation(db, request.caller, request.params.id, request.query));
};
