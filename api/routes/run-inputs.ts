import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { answerInputFor, type AnswerDeps } from '../../use-cases/runs/run-inputs';
import type { RunViewCache } from '../../use-cases/runs/run-view-cache';
import { id, problemResponse, timestamp } from '../schemas';
import { decidedBySchema } from '../../core/run-view';

const actions = z.enum(['accept', 'decline', 'cancel']);

const answerBody = z.strictObject({
  action: actions,
  // Each value is checked against the input's requestedSchema, without coercion; here only the size.
  content: z.record(z.string(), z.unknown())
    .refine((content) => Object.keys(content).length <= 100, 'at most 100 fields')
    .meta({
      maxProperties: 100, description: 'with accept, for a form-mode input: the fields, checked against the input\'s requestedSchema',
    })
    .optional(),
});

const answeredInput = z.object({
  inputId: id, runId: id, toolCallId: z.string(), status: actions, answeredAt: timestamp,
  decidedBy: decidedBySchema.nullable().describe('who answered: the principal of the request\'s credentials'),
});

export interface RunInputRouteDeps extends Omit<AnswerDeps, 'onSignalFailed'> {
  views: RunViewCache;
}

export const runInputRoutes: FastifyPluginAsyncZod<RunInputRouteDeps> = async (app, { db, client, views }) => {
  app.post('/runs/:id/inputs/:inputId', {
    config: { role: 'decide' },
    schema: {
      tags: ['runs'], summary: "Answer a question an MCP server asked during one of the run's tool calls (one of its pendingInputs)",
      params: z.strictObject({ id, inputId: id }),
      body: answerBody,
      response: {
        200: answeredInput,
        400: problemResponse('Invalid answer: the content does not match the requested schema (the field is named)'),
        404: problemResponse('No such run or input'),
        409: problemResponse('The input no longer waits: answered, expired, or its tool call ended (code input_closed)'),
      },
    },
  }, async (request) => {
    const onSignalFailed = (err: unknown) => request.log.warn({ err: (err as Error)?.message },
      'the answer is stored; the run was not told of it');
    const { id: runId, inputId } = request.params;
    const input = await answerInputFor({ db, client, onSignalFailed }, request.caller, runId, inputId, request.body);
    views.forget(input.runId);
    const { toolCallId, status, answeredAt, decidedBy } = input;
    return { inputId: input.inputId, runId: input.runId, toolCallId, status, answeredAt, decidedBy };
  });
};
