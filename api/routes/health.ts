import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { pingDatabase, type Db } from '../../store/pool';
import { problem, sendProblem } from '../problem';
import { problemResponse } from '../schemas';
import { withDeadline } from '../../platform/deadline';
import { featuresOffWithoutKey } from '../../platform/secrets/key-ring';
import { missingAttributesText, type SearchAttributeGuard } from '../../platform/temporal/search-attributes';

const CHECK_DEADLINE_MS = 2_000;
/** Temporal keeps a poller in the task queue's description for a while after its last poll. */
const POLLER_FRESH_MS = 90_000;

const featuresOffSchema = z.array(z.string()).describe('what is off until the operator configures it (SECRETS_KEY)');

const checksSchema = z.object({
  database: z.string(), temporal: z.string(), workers: z.string(),
  searchAttributes: z.string().describe('missing: the namespace lacks search attributes runs start with, and this engine may not add them (detail names them and the command that adds them)'),
});

type Check = keyof z.infer<typeof checksSchema>;

/** Missing search attributes, as the probe rejects with them. */
class AttributesMissing extends Error {}

/** At least one worker polls the task queue recently: without one, runs would start and never move. */
async function workerPolling(client: Client, taskQueue: string): Promise<void> {
  const { pollers } = await client.withDeadline(Date.now() + CHECK_DEADLINE_MS, () => client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  }));
  const now = Date.now();
  const fresh = (pollers ?? []).some((p) => {
    const seconds = Number(p.lastAccessTime?.seconds ?? 0);
    return now - seconds * 1000 < POLLER_FRESH_MS;
  });
  if (!fresh) throw new Error(`no worker polls task queue ${taskQueue}`);
}

/** What the namespace lacks, after adding what this engine may (a fresh look each time: the probe notices them gone). */
async function searchAttributesPresent(guard: SearchAttributeGuard, namespace: string): Promise<void> {
  const missing = await guard.refresh();
  if (missing.length > 0) throw new AttributesMissing(missingAttributesText(namespace, missing));
}

/** The check's word, and what the 503's detail says of it. */
function verdict(name: Check, outcome: PromiseSettledResult<unknown>): { check: string; says?: string } {
  if (outcome.status === 'fulfilled') return { check: 'ok' };
  if (name === 'workers') return { check: 'none polling', says: 'no worker polls the task queue' };
  if (outcome.reason instanceof AttributesMissing) return { check: 'missing', says: outcome.reason.message };
  if (name === 'searchAttributes') return { check: 'unknown', says: 'the search attributes could not be checked' };
  return { check: 'unreachable', says: `${name} unreachable` };
}

export const healthRoutes: FastifyPluginAsyncZod<{ db: Db; client: Client; taskQueue: string; searchAttributes: SearchAttributeGuard }> = async (app, deps) => {
  const { db, client, taskQueue } = deps;
  const probes: Record<Check, () => Promise<unknown>> = {
    database: () => withDeadline(pingDatabase(db), CHECK_DEADLINE_MS),
    temporal: () => client.withDeadline(Date.now() + CHECK_DEADLINE_MS, () => client.workflowService.getSystemInfo({})),
    workers: () => workerPolling(client, taskQueue),
    searchAttributes: () => withDeadline(searchAttributesPresent(deps.searchAttributes, client.options.namespace), CHECK_DEADLINE_MS),
  };

  app.get('/healthz', {
    config: { rateLimit: false },
    schema: {
      tags: ['health'], summary: 'Liveness: the process answers', security: [],
      response: { 200: z.object({ status: z.enum(['ok']) }) },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    config: { rateLimit: false },
    schema: {
      tags: ['health'], summary: 'Readiness: PostgreSQL and Temporal answer, the namespace has the search attributes runs start with, and a worker polls the task queue', security: [],
      response: {
        200: z.object({ status: z.enum(['ok']), checks: checksSchema, featuresOff: featuresOffSchema.optional() }),
        503: problemResponse('A dependency does not answer, no worker polls, or the namespace lacks search attributes; detail names it'),
      },
    },
  }, async (request, reply) => {
    const names = Object.keys(probes) as Check[];
    const outcomes = await Promise.allSettled(names.map((name) => probes[name]()));
    const verdicts = names.map((name, i) => verdict(name, outcomes[i]));
    const checks = Object.fromEntries(names.map((name, i) => [name, verdicts[i].check])) as Record<Check, string>;
    const failed = names.filter((_, i) => outcomes[i].status === 'rejected');
    // Ready all the same: what is off waits for the operator's configuration, not for time.
    const featuresOff = featuresOffWithoutKey();
    const off = featuresOff.length > 0 ? { featuresOff } : {};
    if (failed.length === 0) return { status: 'ok' as const, checks, ...off };
    // The causes go to the log only: this endpoint is unauthenticated, and errors can name hosts.
    request.log.warn({ causes: outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'ok')) }, 'not ready');
    const what = verdicts.flatMap((v) => (v.says ? [v.says] : []));
    return sendProblem(reply, problem(503, `Not ready: ${what.join('; ')}`, 'not_ready', { checks, ...off }));
  });
};
