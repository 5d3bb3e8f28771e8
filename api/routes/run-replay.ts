import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { REPLAY_TOOLS } from '../../core/replay';
import { runAcceptedSchema } from '../../core/run-view';
import { agentModelSchema } from '../../use-cases/agents/agent-requests';
import { replayRun, type ReplayRunDeps } from '../../use-cases/runs/replay-run';
import { id, idParams, problemResponse } from '../schemas';

const replayRunBody = z.strictObject({
  tools: z.enum(REPLAY_TOOLS).describe('where the replay\'s tool calls get their results: recorded, the result the original got for '
    + 'the same name and arguments, else "Not recorded: …" (nothing outside the engine is asked); recorded-then-live, the recorded '
    + 'result, else the call goes live; live, every call goes live'),
  agentId: id.optional().describe('the agent the replay runs on (id or name), whose instructions and model it takes; '
    + 'by default the original\'s agent, as it is now. The tools are the original\'s'),
  model: agentModelSchema.optional().describe('the model the replay runs on, in place of its agent\'s; '
    + 'baseUrl and apiKeyEnv need the admin key, as on POST /v1/agents'),
});

/** POST /v1/runs/:id/replay (docs/time-travel.md). */
export const runReplayRoutes: FastifyPluginAsyncZod<ReplayRunDeps> = async (app, deps) => {
  app.post('/runs/:id/replay', {
    schema: {
      tags: ['runs'], summary: 'Replay a run: its input again on a new thread, its tool calls answered from its recording or live',
      params: idParams, body: replayRunBody,
      response: {
        202: runAcceptedSchema,
        400: problemResponse('Invalid request'),
        403: problemResponse('The caller may not start runs, or model.baseUrl and model.apiKeyEnv need the admin key'),
        404: problemResponse('No such run or agent'),
        409: problemResponse('The run has no recorded preparation to replay, or the agent was deleted (agent_disabled)'),
      },
    },
  }, async (request, reply) => {
    const { run } = await replayRun(deps, request.caller, { runId: request.params.id, ...request.body });
    return reply.code(202).send({ id: run.id, threadId: run.threadId, status: 'running' });
  });
};
