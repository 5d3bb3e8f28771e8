import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { listAudit, type AuditDeps } from '../../use-cases/tenants/audit';
import { id, problemResponse, queryInteger, timestamp } from '../schemas';

const auditEventSchema = z.object({
  id: z.string().describe('the cursor: pass it as `after` for the events that follow'),
  tenantId: z.string().describe('the tenant the caller acted in'),
  principalId: z.string().describe("a key's id (`key_…`), `api_key` or `operator`"),
  principalName: z.string(),
  action: z.string().describe("the method and the route's pattern, e.g. `DELETE /v1/keys/:id`"),
  target: z.string().nullable().describe("the object's id, e.g. `key_…`; `run_…/<toolCallId>` for a decision"),
  address: z.string().nullable().describe("the client's address"),
  at: timestamp,
}).meta({ id: 'AuditEvent' });

const auditQuery = z.strictObject({
  tenantId: id.optional().describe("a tenant's id or name; absent: your own tenant, or every tenant for the operator"),
  after: z.string().min(1).max(64).optional()
    .describe('the nextCursor of the previous page (an event id), or an ISO 8601 time: only later events'),
  limit: queryInteger(1, 500).default(100),
});

/** GET /v1/audit: who did what (docs/security.md, Audit log). */
export const auditRoutes: FastifyPluginAsyncZod<AuditDeps> = async (app, { db }) => {
  app.get('/audit', {
    config: { role: 'manage' },
    schema: {
      tags: ['audit'],
      summary: 'The audit log, oldest first: each act of manage, decide or operate (never a secret); '
        + "a tenant's manage reads its own tenant's, the operator every tenant's",
      querystring: auditQuery,
      response: {
        200: z.object({ events: z.array(auditEventSchema), nextCursor: z.string().nullable() }),
        400: problemResponse('Invalid tenantId, after or limit'),
        403: problemResponse('Needs the role manage'),
        404: problemResponse('No such tenant'),
      },
    },
  }, async (request) => listAudit(db, request.caller, request.query));
};
