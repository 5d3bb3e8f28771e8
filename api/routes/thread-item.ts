import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { changeThreadMetadata, readThread, type ThreadDeps } from '../../use-cases/threads/threads';
import { idParams, problemResponse } from '../schemas';
import { changeThreadBody, threadSchema, threadWithCostSchema } from './thread-schemas';

/** GET and PATCH /v1/threads/:id. */
export const threadItemRoutes: FastifyPluginAsyncZod<ThreadDeps> = async (app, { db }) => {
  app.get('/threads/:id', {
    schema: {
      tags: ['threads'], summary: 'Read a thread, with what its runs cost', params: idParams,
      response: { 200: threadWithCostSchema, 404: problemResponse('No such thread') },
    },
  }, async (request) => readThread(db, request.caller, request.params.id));

  app.patch('/threads/:id', {
    schema: {
      tags: ['threads'], summary: 'Change a thread\'s metadata (replaced whole); the next run of the thread reads it',
      params: idParams, body: changeThreadBody,
      response: { 200: threadSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such thread') },
    },
  }, async (request) => changeThreadMetadata(db, request.caller, request.params.id, request.body.metadata));
};
