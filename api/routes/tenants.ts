import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { TenantDeps } from '../../use-cases/tenants/tenants';
import { createTenant, listTenantsFor } from '../../use-cases/tenants/tenants';
import { problemResponse, timestamp } from '../schemas';

const tenantSchema = z.object({ id: z.string(), name: z.string(), createdAt: timestamp }).meta({ id: 'Tenant' });

/** POST and GET /v1/tenants: the operator makes tenants; a tenant's principals see their own. */
export const tenantRoutes: FastifyPluginAsyncZod<TenantDeps> = async (app, { db }) => {
  app.post('/tenants', {
    config: { role: 'operate' },
    schema: {
      tags: ['tenants'], summary: 'Create a tenant (operator)',
      body: z.strictObject({ name: z.string().min(1).max(63) }),
      response: {
        201: tenantSchema, 400: problemResponse('Invalid request'), 403: problemResponse('Needs the operator'),
        409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await createTenant(db, request.caller, request.body.name)));

  app.get('/tenants', {
    schema: {
      tags: ['tenants'], summary: 'List tenants: every one to the operator, your own otherwise',
      response: { 200: z.object({ tenants: z.array(tenantSchema) }) },
    },
  }, async (request) => ({ tenants: await listTenantsFor(db, request.caller) }));
};
