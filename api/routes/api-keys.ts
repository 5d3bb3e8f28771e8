import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ROLES } from '../../core/tenancy';
import type { TenantDeps } from '../../use-cases/tenants/tenants';
import { issueKey, listKeys, revokeKey } from '../../use-cases/tenants/api-keys';
import { id, idParams, problemResponse, timestamp } from '../schemas';

const keySchema = z.object({
  id: z.string(), tenantId: z.string(), name: z.string(), roles: z.array(z.enum(ROLES)),
  createdBy: z.string().nullable(), expiresAt: timestamp.nullable(), createdAt: timestamp,
}).meta({ id: 'ApiKey' });

const issueBody = z.strictObject({
  tenantId: id.optional().describe("a tenant's id or name; your own when absent"),
  name: z.string().min(1).max(200),
  roles: z.array(z.enum(ROLES)).min(1).max(ROLES.length),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
});

/** POST, GET and DELETE /v1/keys: a tenant's API keys, managed by its `manage` or the operator. */
export const apiKeyRoutes: FastifyPluginAsyncZod<TenantDeps> = async (app, { db }) => {
  app.post('/keys', {
    config: { role: 'manage' },
    schema: {
      tags: ['keys'], summary: 'Issue an API key; the key is in this response only',
      body: issueBody,
      response: {
        201: keySchema.extend({ key: z.string().describe('the secret: send it as "Authorization: Bearer <key>"') }),
        400: problemResponse('Invalid request'), 403: problemResponse('A role the issuer does not hold'),
        404: problemResponse('No such tenant'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await issueKey(db, request.caller, request.body)));

  app.get('/keys', {
    config: { role: 'manage' },
    schema: {
      tags: ['keys'], summary: 'List the keys not revoked (never their secrets)',
      querystring: z.strictObject({ tenantId: id.optional() }),
      response: { 200: z.object({ keys: z.array(keySchema) }), 404: problemResponse('No such tenant') },
    },
  }, async (request) => ({ keys: await listKeys(db, request.caller, request.query.tenantId) }));

  app.delete('/keys/:id', {
    config: { role: 'manage' },
    schema: {
      tags: ['keys'], summary: 'Revoke a key: every API process refuses it within a second', params: idParams,
      response: { 204: z.null().describe('Revoked'), 404: problemResponse('No such key') },
    },
  }, async (request, reply) => {
    await revokeKey(db, request.caller, request.params.id);
    return reply.code(204).send(null);
  });
};
