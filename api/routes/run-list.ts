import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { findRuns, type FindRunsDeps } from '../../use-cases/runs/find-runs';
import { problemResponse, queryBoolean, queryInteger, timestamp } from '../schemas';
import { runStatus } from '../../core/run-view';

// Filters become visibility-query literals: ids are restricted to the characters our ids use.
const filterId = z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/);

const listRunsQuery = z.strictObject({
  threadId: filterId.optional(),
  parentRunId: filterId.optional().describe('only the runs this run started as sub-agents'),
  agentId: z.string().min(1).max(128).regex(/^[A-Za-z0-9_.-]+$/).optional().describe('an agent id or name'),
  status: runStatus.optional(),
  waiting: queryBoolean.optional()
    .describe('true: only runs waiting for a person: a tool call waiting for approval, an MCP server\'s question, '
      + 'or a reviewer\'s decision on its sampling request, of either protocol era (the waitingFor search attribute); '
      + 'false: only runs without'),
  buildId: z.string().min(1).max(200).regex(/^[A-Za-z0-9_.+-]+$/).optional()
    .describe('only the runs whose last turn ran on this Worker Deployment build (the run object\'s version.buildId), newest first; '
      + 'not with waiting'),
  cursor: z.string().min(1).max(4096).regex(/^[A-Za-z0-9_.-]+$/).optional().describe('nextCursor of the previous page'),
  limit: queryInteger(1, 100).default(20),
});

const runSummary = z.object({
  id: z.string(), threadId: z.string(), agentId: z.string(), status: runStatus,
  stopReason: z.string().nullable(),
  turns: z.int().nullable().describe('LLM turns completed so far (null for a run the database does not know)'),
  createdAt: timestamp,
  endedAt: timestamp.nullable(),
});

export const runListRoutes: FastifyPluginAsyncZod<FindRunsDeps> = async (app, deps) => {
  app.get('/runs', {
    schema: {
      tags: ['runs'],
      summary: 'List runs from Temporal visibility: running runs first (newest first), then ended runs, most recently ended first; '
        + '?waiting=true lists runs waiting for a person (approval or input)',
      querystring: listRunsQuery,
      response: {
        200: z.object({ runs: z.array(runSummary), nextCursor: z.string().nullable() }),
        400: problemResponse('Invalid filter or cursor'),
        404: problemResponse('No such agent'),
      },
    },
  }, async (request) => {
    const { agentId: agentRef, ...query } = request.query;
    return findRuns(deps, { ...query, tenantId: request.caller.tenantId, agentRef });
  });
};
