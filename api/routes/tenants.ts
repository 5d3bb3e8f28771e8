import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { TenantDeps } from '../../use-cases/tenants/tenants';
import { changeTenantLimits, createTenant, listTenantsFor, tenantFor } from '../../use-cases/tenants/tenants';
import { problemResponse, timestamp } from '../schemas';

const limitsSchema = z.object({
  maxRunningRuns: z.int().min(1).max(1_000_000).nullable()
    .describe('how many of the tenant\'s runs may run at once (sub-agents\' runs count); a start beyond it answers 429. null: no cap'),
  toolCallSlots: z.int().min(1).max(10_000).nullable()
    .describe('how many tool calls of the tenant\'s runs one worker runs at once; further calls wait their turn. null: no cap'),
}).meta({ id: 'TenantLimits' });

const tenantSchema = z.object({ id: z.string(), name: z.string(), limits: limitsSchema, createdAt: timestamp }).meta({ id: 'Tenant' });

/** POST and GET /v1/tenants: the operator makes tenants; a tenant's principals see their own. */
export const tenantRoutes: FastifyPluginAsyncZod<TenantDeps> = async (app, deps) => {
  app.post('/tenants', {
    config: { role: 'operate' },
    schema: {
      tags: ['tenants'], summary: 'Create a tenant (operator)',
      body: z.strictObject({ name: z.string().min(1).max(63), limits: limitsSchema.partial().strict().optional() }),
      response: {
        201: tenantSchema, 400: problemResponse('Invalid request'), 403: problemResponse('Needs the operator'),
        409: problemResponse('The name is taken'),
      },
    },
  }, async (request, reply) => reply.code(201).send(await createTenant(deps, request.caller, request.body.name, request.body.limits)));

  app.patch('/tenants/:id', {
    config: { role: 'operate' },
    schema: {
      tags: ['tenants'], summary: 'Set or lift (null) a tenant\'s caps (operator)',
      params: z.object({ id: z.string().min(1).max(200).describe('the tenant\'s id or name') }),
      body: z.strictObject({ limits: limitsSchema.partial().strict() }),
      response: {
        200: tenantSchema, 400: problemResponse('Invalid request'), 403: problemResponse('Needs the operator'),
        404: problemResponse('No such tenant'),
      },
    },
  }, async (request) => changeTenantLimits(deps.db, request.caller, request.params.id, request.body.limits));

  app.get('/tenants/:id', {
    schema: {
      tags: ['tenants'], summary: 'A tenant: any to the operator, your own otherwise',
      params: z.object({ id: z.string().min(1).max(200).describe('the tenant\'s id or name') }),
      response: { 200: tenantSchema, 404: problemResponse('No such tenant') },
    },
  }, async (request) => tenantFor(deps.db, request.caller, request.params.id));

  app.get('/tenants', {
    schema: {
      tags: ['tenants'], summary: 'List tenants: every one to the operator, your own otherwise',
      response: { 200: z.object({ tenants: z.array(tenantSchema) }) },
    },
  }, async (request) => ({ tenants: await listTenantsFor(deps.db, request.caller) }));
};
