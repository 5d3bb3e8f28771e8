import type { Client } from '@temporalio/client';
import type { FastifyPluginAsync } from 'fastify';
import type { Db } from '../../core/db/pool';
import { problem, sendProblem } from '../problem';
import { problemResponse } from '../schemas';

const CHECK_DEADLINE_MS = 2_000;

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const checksSchema = {
  type: 'object', required: ['database', 'temporal'],
  properties: { database: { type: 'string' }, temporal: { type: 'string' } },
} as const;

export const healthRoutes: FastifyPluginAsync<{ db: Db; client: Client }> = async (app, { db, client }) => {
  const probes: Record<'database' | 'temporal', () => Promise<unknown>> = {
    database: () => withTimeout(db.query('SELECT 1'), CHECK_DEADLINE_MS),
    temporal: () => client.withDeadline(Date.now() + CHECK_DEADLINE_MS, () => client.workflowService.getSystemInfo({})),
  };

  app.get('/healthz', {
    schema: {
      tags: ['health'], summary: 'Liveness: the process answers', security: [],
      response: { 200: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    schema: {
      tags: ['health'], summary: 'Readiness: PostgreSQL and Temporal answer', security: [],
      response: {
        200: { type: 'object', required: ['status', 'checks'], properties: { status: { type: 'string', enum: ['ok'] }, checks: checksSchema } },
        503: problemResponse('A dependency does not answer; detail names it'),
      },
    },
  }, async (request, reply) => {
    const names = Object.keys(probes) as (keyof typeof probes)[];
    const outcomes = await Promise.allSettled(names.map((name) => probes[name]()));
    const checks = Object.fromEntries(names.map((name, i) => [name, outcomes[i].status === 'fulfilled' ? 'ok' : 'unreachable']));
    const failed = names.filter((_, i) => outcomes[i].status === 'rejected');
    if (failed.length === 0) return { status: 'ok' as const, checks };
    // The causes go to the log only: this endpoint is unauthenticated, and errors can name hosts.
    request.log.warn({ causes: outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'ok')) }, 'not ready');
    return sendProblem(reply, problem(503, `Not ready: ${failed.join(' and ')} unreachable`, 'not_ready', { checks }));
  });
};
