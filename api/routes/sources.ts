import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { listThreadSources, type ThreadDeps } from '../../use-cases/threads/threads';
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
export const sourceRoutes: FastifyPluginAsyncZod<ThreadDeps> = async (app, { db }) => {
  app.get('/threads/:id/sources', {
    schema: {
      tags: ['threads'], summary: "List a thread's data sources (imported CSV resources)", params: idParams,
      response: {
        200: z.object({ sources: z.array(dataSourceSchema) }),
        404: problemResponse('No such thread'),
      },
    },
  }, async (request) => ({ sources: await listThreadSources(db, request.caller, request.params.id) }));
};
