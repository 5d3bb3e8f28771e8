import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ROLES } from '../../core/tenancy';
import { tenantFor, type TenantDeps } from '../../use-cases/tenants/tenants';

/** GET /v1/me: who the request's credentials say the caller is (the console and the CLI show it). */
export const meRoutes: FastifyPluginAsyncZod<TenantDeps> = async (app, { db }) => {
  app.get('/me', {
    schema: {
      tags: ['tenants'], summary: 'Who you are: your tenant, principal and roles',
      response: {
        200: z.object({
          tenant: z.object({ id: z.string(), name: z.string() }),
          principal: z.object({ id: z.string(), name: z.string() }),
          roles: z.array(z.enum(ROLES)),
          operator: z.boolean().describe('whether you hold the operator\'s reach (operate)'),
        }),
      },
    },
  }, async (request) => {
    const { caller } = request;
    const tenant = await tenantFor(db, caller, caller.tenantId);
    return {
      tenant: { id: tenant.id, name: tenant.name }, principal: caller.principal, roles: [...caller.roles], operator: caller.isOperator,
    };
  });
};
