import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { readUsage, type UsageDeps } from '../../use-cases/usage';
import { id, problemResponse } from '../schemas';

const totals = {
  turns: z.int(),
  samplings: z.int().describe('MCP servers\' sampling requests the run\'s model answered (their tokens and cost count too)'),
  inputTokens: z.int(), cachedInputTokens: z.int().describe('of the input tokens, those read from the provider\'s cache'),
  outputTokens: z.int(),
  usd: z.number().describe('the priced turns\' and sampling answers\' cost, in USD'),
  priced: z.boolean().describe('false when a turn\'s model had no price (PRICES_FILE): its cost is not in usd, never counted as zero'),
};

const usageSchema = z.object({
  from: z.string(), to: z.string(), groupBy: z.enum(['agent', 'model', 'tenant']),
  groups: z.array(z.object({
    key: z.string().describe('the agent\'s id, `provider/model`, or the tenant\'s id'),
    name: z.string().optional().describe('the agent\'s or the tenant\'s name'),
    ...totals,
  })),
  total: z.object(totals),
  truncated: z.boolean().describe('more than 1,000 groups: narrow the range'),
}).meta({ id: 'Usage' });

/** GET /v1/usage: tokens and spend of completed LLM turns, grouped (docs/observability.md, Cost). */
export const usageRoutes: FastifyPluginAsyncZod<UsageDeps> = async (app, { db }) => {
  app.get('/usage', {
    schema: {
      tags: ['usage'],
      summary: 'Tokens and spend of the LLM turns and sampling answers completed in [from, to) (default: 30 days), by agent, model, tenant',
      querystring: z.strictObject({
        from: z.string().max(64).optional(), to: z.string().max(64).optional(),
        groupBy: z.enum(['agent', 'model', 'tenant']).default('agent'),
        tenantId: id.optional().describe('a tenant\'s id or name; absent: your own tenant, or every tenant for the operator'),
      }),
      response: { 200: usageSchema, 400: problemResponse('Invalid from, to, groupBy or tenantId'), 404: problemResponse('No such tenant') },
    },
  }, async (request) => readUsage(db, request.caller, request.query));
};
