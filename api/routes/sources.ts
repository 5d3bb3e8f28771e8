import type { FastifyPluginAsync } from 'fastify';
import { listDataSources } from '../../store/data-sources';
import type { Db } from '../../store/pool';
import { findThread } from '../../store/threads/threads';
import { HttpProblem } from '../../use-cases/problem';
import { idParams, problemResponse } from '../schemas';

const dataSourceSchema = {
  type: 'object',
  required: ['id', 'uri', 'integrationId', 'tableName', 'columns', 'rowCount', 'bytes', 'createdAt'],
  properties: {
    id: { type: 'string' },
    uri: { type: 'string', description: 'the resource URI, with template parameters filled in' },
    integrationId: { type: ['string', 'null'] },
    tableName: { type: 'string', description: "the table in the thread's schema, as source_query names it" },
    columns: {
      type: 'array',
      items: {
        type: 'object', required: ['name', 'type'],
        properties: {
          name: { type: 'string' },
          type: { type: 'string', enum: ['integer', 'bigint', 'numeric', 'boolean', 'date', 'timestamp', 'timestamptz', 'text'] },
        },
      },
    },
    rowCount: { type: 'integer' },
    bytes: { type: 'integer', description: 'size of the resource as it arrived' },
    createdAt: { type: 'string', format: 'date-time', description: 'when this version of the table was imported' },
  },
} as const;

/** GET /v1/threads/:id/sources (contract): the CSV resources imported into the thread. */
export const sourceRoutes: FastifyPluginAsync<{ db: Db }> = async (app, { db }) => {
  app.get<{ Params: { id: string } }>('/threads/:id/sources', {
    schema: {
      tags: ['threads'], summary: "List a thread's data sources (imported CSV resources)", params: idParams,
      response: {
        200: { type: 'object', required: ['sources'], properties: { sources: { type: 'array', items: dataSourceSchema } } },
        404: problemResponse('No such thread'),
      },
    },
  }, async (request) => {
    if (!(await findThread(db, request.params.id))) throw new HttpProblem(404, `Thread ${request.params.id} does not exist`, 'not_found');
    const sources = await listDataSources(db, request.params.id);
    return { sources: sources.map(({ threadId: _t, schemaName: _s, ...source }) => source) };
  });
};
