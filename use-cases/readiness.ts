import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { withDeadline } from '../platform/deadline';
import { missingAttributesText, type SearchAttributeGuard } from '../platform/temporal/search-attributes';
import { pingDatabase, type Db } from '../store/pool';

/*
 * Whether this API process can serve runs (GET /readyz): PostgreSQL and Temporal answer, the
 * namespace has the search attributes runs start with, and a worker polls the task queue.
 */

export interface ReadinessDeps {
  db: Db;
  client: Client;
  taskQueue: string;
  searchAttributes: SearchAttributeGuard;
}

export type Check = 'database' | 'temporal' | 'workers' | 'searchAttributes';

export interface Readiness {
  /** each check's word: ok, unreachable, none polling, missing or unknown */
  checks: Record<Check, string>;
  /** what each failed check says, for a person; empty when every check passed */
  problems: string[];
  /** each check's error, or ok: for the log only, since errors can name hosts */
  causes: string[];
}

const CHECK_DEADLINE_MS = 2_000;
/** Temporal keeps a poller in the task queue's description for a while after its last poll. */
const POLLER_FRESH_MS = 90_000;

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

/** The check's word, and what a failed one says of it. */
function verdict(name: Check, outcome: PromiseSettledResult<unknown>): { check: string; says?: string } {
  if (outcome.status === 'fulfilled') return { check: 'ok' };
  if (name === 'workers') return { check: 'none polling', says: 'no worker polls the task queue' };
  if (outcome.reason instanceof AttributesMissing) return { check: 'missing', says: outcome.reason.message };
  if (name === 'searchAttributes') return { check: 'unknown', says: 'the search attributes could not be checked' };
  return { check: 'unreachable', says: `${name} unreachable` };
}

/** Every check at once, each within its deadline. */
export async function checkReadiness(deps: ReadinessDeps): Promise<Readiness> {
  const { db, client, taskQueue } = deps;
  const probes: Record<Check, () => Promise<unknown>> = {
    database: () => withDeadline(pingDatabase(db), CHECK_DEADLINE_MS),
    temporal: () => client.withDeadline(Date.now() + CHECK_DEADLINE_MS, () => client.workflowService.getSystemInfo({})),
    workers: () => workerPolling(client, taskQueue),
    searchAttributes: () => withDeadline(searchAttributesPresent(deps.searchAttributes, client.options.namespace), CHECK_DEADLINE_MS),
  };
  const names = Object.keys(probes) as Check[];
  const outcomes = await Promise.allSettled(names.map((name) => probes[name]()));
  const verdicts = names.map((name, i) => verdict(name, outcomes[i]));
  return {
    checks: Object.fromEntries(names.map((name, i) => [name, verdicts[i].check])) as Record<Check, string>,
    problems: verdicts.flatMap((v) => (v.says ? [v.says] : [])),
    causes: outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'ok')),
  };
}
