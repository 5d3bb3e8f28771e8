import type { Client } from '@temporalio/client';
import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '../../store/pool';
import { resolveRef } from '../../store/refs';
import { listRuns, type ListRunsRequest } from '../../use-cases/runs/list-runs';
import { HttpProblem } from '../../use-cases/problem';
import { problemResponse, runStatus } from '../json-schemas';

// Filters become visibility-query literals: ids are restricted to the characters our ids use.
const filterId = { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' } as const;

const listRunsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    threadId: filterId,
    agentId: { ...filterId, pattern: '^[A-Za-z0-9_.-]+$', description: 'an agent id or name' },
    status: runStatus,
    waiting: { type: 'boolean', description: 'true: only runs with a tool call waiting for approval (the waitingForApproval search attribute); false: only runs without' },
    cursor: { type: 'string', minLength: 1, maxLength: 4096, pattern: '^[A-Za-z0-9_.-]+$', description: 'nextCursor of the previous page' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
} as const;

const runSummary = {
  type: 'object',
  required: ['id', 'threadId', 'agentId', 'status', 'stopReason', 'turns', 'createdAt', 'endedAt'],
  properties: {
    id: { type: 'string' }, threadId: { type: 'string' }, agentId: { type: 'string' }, status: runStatus,
    stopReason: { type: ['string', 'null'] },
    turns: { type: ['integer', 'null'], description: 'LLM turns completed so far (null for a run the database does not know)' },
    createdAt: { type: 'string', format: 'date-time' },
    endedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const runListRoutes: FastifyPluginAsync<{ db: Db; client: Client }> = async (app, deps) => {
  app.get<{ Querystring: ListRunsRequest }>('/runs', {
    schema: {
      tags: ['runs'],
      summary: 'List runs from Temporal visibility: running runs first (newest first), then ended runs, most recently ended first; ?waiting=true lists runs waiting for approval',
      querystring: listRunsQuery,
      response: {
        200: {
          type: 'object', required: ['runs', 'nextCursor'],
          properties: { runs: { type: 'array', items: runSummary }, nextCursor: { type: ['string', 'null'] } },
        },
        400: problemResponse('Invalid filter or cursor'),
        404: problemResponse('No such agent'),
      },
    },
  }, async (request) => {
    const { agentId: agentRef, ...filters } = request.query;
    if (agentRef === undefined) return listRuns(deps, filters);
    const agentId = await resolveRef(deps.db, 'agents', agentRef);
    if (!agentId) throw new HttpProblem(404, `Agent ${agentRef} does not exist`, 'not_found');
    return listRuns(deps, { ...filters, agentId });
  });
};
