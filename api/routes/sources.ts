import { listDataSources } from '../../store/data-sources';
import type { Db } from '../../store/pool';
import { findThread } from '../../store/threads/threads';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EngineError } from '../../core/engine-error';
import { idParams, problemResponse, timestamp } from '../schemas';

const dataSourceSchema = z.object({
  id: z.string(),
  uri: z.string().describe('the resource URI, with template parameters filled in'),
  integrationId: z.string().nullable(),
  tableName: z.string().describe("the table in the thread's schema, as source_query names it"),
  columns: z.array(z.object({
    name: z.string(),
    type: z.enum(['integer', 'bigint', 'numeric', 'boolean', 'date', 'timestamp', 'timestamptz', 'text']),
  })),
  rowCount: z.int(),
  bytes: z.int().describe('size of the resource as it arrived'),
  createdAt: timestamp.describe('when this version of the table was imported'),
});

/** GET /v1/threads/:id/sources (contract): the CSV resources imported into the thread. */
export const sourceRoutes: FastifyPluginAsyncZod<{ db: Db }> = async (app, { db }) => {
  app.get('/threads/:id/sources', {
    schema: {
      tags: ['threads'], summary: "List a thread's data sources (imported CSV resources)", params: idParams,
      response: {
        200: z.object({ sources: z.array(dataSourceSchema) }),
        404: problemResponse('No such thread'),
      },
    },
  }, async (request) => {
    if (!(await findThread(db, request.params.id))) throw new EngineError('not_found', `Thread ${request.params.id} does not exist`);
    const sources = await listDataSources(db, request.params.id);
    return { sources: sources.map(({ threadId: _t, schemaName: _s, ...source }) => source) };
  });
};
