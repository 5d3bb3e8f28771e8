import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '../../store/pool';
import { answerInput, type InputAnswer } from '../../use-cases/runs/run-inputs';
import type { RunViewCache } from '../../use-cases/runs/run-view-cache';
import { problemResponse } from '../json-schemas';

const id = { type: 'string', minLength: 1, maxLength: 128 } as const;

const answerBody = {
  type: 'object', required: ['action'], additionalProperties: false,
  properties: {
    action: { type: 'string', enum: ['accept', 'decline', 'cancel'] },
    content: {
      type: 'object', maxProperties: 100,
      // Each value is checked against the input's requestedSchema, without coercion; here only the size.
      additionalProperties: true,
      description: 'with accept, for a form-mode input: the fields, checked against the input\'s requestedSchema',
    },
  },
} as const;

export const runInputRoutes: FastifyPluginAsync<{ db: Db; views: RunViewCache }> = async (app, { db, views }) => {
  app.post<{ Params: { id: string; inputId: string }; Body: InputAnswer }>('/runs/:id/inputs/:inputId', {
    schema: {
      tags: ['runs'], summary: "Answer a question an MCP server asked during one of the run's tool calls (one of its pendingInputs)",
      params: { type: 'object', required: ['id', 'inputId'], additionalProperties: false, properties: { id, inputId: id } },
      body: answerBody,
      response: {
        200: {
          type: 'object', required: ['inputId', 'runId', 'toolCallId', 'status', 'answeredAt'],
          properties: { inputId: id, runId: id, toolCallId: { type: 'string' }, status: { type: 'string', enum: ['accept', 'decline', 'cancel'] }, answeredAt: { type: 'string', format: 'date-time' } },
        },
        400: problemResponse('Invalid answer: the content does not match the requested schema (the field is named)'),
        404: problemResponse('No such run or input'),
        409: problemResponse('The input no longer waits: answered, expired, or its tool call ended (code input_closed)'),
      },
    },
  }, async (request) => {
    const input = await answerInput(db, request.params.id, request.params.inputId, request.body);
    views.forget(input.runId);
    return { inputId: input.inputId, runId: input.runId, toolCallId: input.toolCallId, status: input.status, answeredAt: input.answeredAt };
  });
};
