import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { previewAgentContext } from '../../use-cases/agents/agent-context';
import { DEFAULT_CONTEXT_PREVIEW_WAIT_MS } from '../../use-cases/worker-questions';
import { callerGoneSignal, closingSignal } from '../closing-signal';
import { idParams, problemResponse } from '../schemas';
import { agentContextSchema, contextQuery } from './agent-schemas';
import type { AgentRouteDeps } from './route-deps';

/** GET /v1/agents/:id/context: the prompt prefix a run would get, as a worker builds it. */
export const agentContextRoutes: FastifyPluginAsyncZod<AgentRouteDeps> = async (app, deps) => {
  const closing = closingSignal(app);
  const waitMs = deps.contextWaitMs ?? DEFAULT_CONTEXT_PREVIEW_WAIT_MS;

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
    const worker = { ...deps, logger: request.log, waitMs, callerGone: callerGoneSignal(reply, closing) };
    return previewAgentContext(worker, request.caller, request.params.id, request.query.threadId);
  });
};
