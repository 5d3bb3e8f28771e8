import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { agentDisabledText, findAgentByRef } from '../../store/agents';
import type { Db } from '../../store/pool';
import { pageThreadMessages } from '../../store/threads/thread-messages';
import { findThread, insertThread, listThreads, updateThreadMetadata } from '../../store/threads/threads';
import { EngineError } from '../../core/engine-error';
import { idParams, problemResponse } from '../schemas';
import { changeThreadBody, createThreadBody, messagePageSchema, messagesQuery, threadPageSchema, threadSchema, threadsQuery } from './thread-schemas';

export const threadRoutes: FastifyPluginAsyncZod<{ db: Db }> = async (app, { db }) => {

  app.post('/threads', {
    schema: {
      tags: ['threads'], summary: 'Create a thread for an agent (by id or name)', body: createThreadBody,
      response: {
        201: threadSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such agent'),
        409: problemResponse('The agent was deleted (agent_disabled)'),
      },
    },
  }, async (request, reply) => {
    const agent = await findAgentByRef(db, request.body.agentId);
    if (!agent) throw new EngineError('not_found', `Agent ${request.body.agentId} does not exist`);
    if (agent.disabledAt) throw new EngineError('agent_disabled', agentDisabledText(agent));
    return reply.code(201).send(await insertThread(db, agent.id, request.body.metadata));
  });

  app.get('/threads', {
    schema: {
      tags: ['threads'], summary: 'List threads, newest first, optionally of one agent (by id or name)', querystring: threadsQuery,
      response: { 200: threadPageSchema, 400: problemResponse('Invalid cursor'), 404: problemResponse('No such agent') },
    },
  }, async (request) => {
    const { agentId: agentRef, ...page } = request.query;
    if (agentRef === undefined) return listThreads(db, page);
    const agent = await findAgentByRef(db, agentRef);
    if (!agent) throw new EngineError('not_found', `Agent ${agentRef} does not exist`);
    return listThreads(db, { ...page, agentId: agent.id });
  });

  app.get('/threads/:id', {
    schema: {
      tags: ['threads'], summary: 'Read a thread', params: idParams,
      response: { 200: threadSchema, 404: problemResponse('No such thread') },
    },
  }, async (request) => {
    const thread = await findThread(db, request.params.id);
    if (!thread) throw new EngineError('not_found', `Thread ${request.params.id} does not exist`);
    return thread;
  });

  app.patch('/threads/:id', {
    schema: {
      tags: ['threads'], summary: 'Change a thread\'s metadata (replaced whole); the next run of the thread reads it', params: idParams, body: changeThreadBody,
      response: { 200: threadSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such thread') },
    },
  }, async (request) => {
    const thread = await updateThreadMetadata(db, request.params.id, request.body.metadata);
    if (!thread) throw new EngineError('not_found', `Thread ${request.params.id} does not exist`);
    return thread;
  });

  app.get('/threads/:id/messages', {
    schema: {
      tags: ['threads'],
      summary: 'Read a thread\'s conversation, oldest first: roles, tool calls and tool results; long texts are cut, with their full size',
      params: idParams, querystring: messagesQuery,
      response: { 200: messagePageSchema, 400: problemResponse('Invalid request'), 404: problemResponse('No such thread') },
    },
  }, async (request) => {
    if (!(await findThread(db, request.params.id))) throw new EngineError('not_found', `Thread ${request.params.id} does not exist`);
    return pageThreadMessages(db, request.params.id, request.query);
  });
};
