import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { Db } from '../../store/pool';
import { storedRunFacts } from '../../store/runs/listing';
import { RUN_WORKFLOW_TYPE, type RunStatus } from '../../core/run';
import { agentIdKey, runStatusKey, tenantIdKey, threadIdKey, waitingForKey, WAITING_FOR_VALUES } from '../../core/search-attributes';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { EngineError } from '../../core/engine-error';

// A listing is short; without a deadline the client would retry a confused server for a long time.
const LIST_DEADLINE_MS = 10_000;

export interface RunSummary {
  id: string;
  threadId: string;
  agentId: string;
  status: RunStatus;
  stopReason: string | null;
  turns: number | null;
  createdAt: string;
  endedAt: string | null;
}

export interface ListRunsRequest {
  /** the caller's tenant: a listing shows its runs only */
  tenantId: string;
  threadId?: string;
  agentId?: string;
  /** only the runs this run started as sub-agents (Temporal's ParentWorkflowId) */
  parentRunId?: string;
  status?: RunStatus;
  /** only runs that wait (true) or do not wait (false) for an approval */
  waiting?: boolean;
  /** an opaque cursor from a previous page's `nextCursor` */
  cursor?: string;
  limit: number;
}

export interface RunPage {
  runs: RunSummary[];
  nextCursor: string | null;
}

/** A cursor that is not one this listing gave out for these filters. */
export const foreignCursor = () =>
  new EngineError('invalid', 'The cursor does not belong to this listing: use the nextCursor of a previous page with the same filters');

/** Values reach the visibility query as string literals; ids never hold quotes, but a filter must not break out. */
export const literal = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The tenant's runs: its TenantId. Runs started before the attribute have none, and are all the
 * tenant `default`'s (a run of another tenant always starts with it), so `default` lists those too.
 */
const tenantClause = (tenantId: string) => (tenantId === DEFAULT_TENANT_ID
  ? `(${tenantIdKey.name} = ${literal(tenantId)} OR ${tenantIdKey.name} IS NULL)`
  : `${tenantIdKey.name} = ${literal(tenantId)}`);

/**
 * The visibility query for a page of the tenant's runs. The workflow id is the run id, and a run
 * that continued-as-new has one closed `ContinuedAsNew` execution per hand-over and exactly one
 * other (running or closed) execution: excluding the hand-overs lists each run once.
 */
export function runListQuery(req: Omit<ListRunsRequest, 'cursor' | 'limit'>): string {
  const clauses = [`WorkflowType = ${literal(RUN_WORKFLOW_TYPE)}`, `ExecutionStatus != 'ContinuedAsNew'`, tenantClause(req.tenantId)];
  if (req.threadId) clauses.push(`${threadIdKey.name} = ${literal(req.threadId)}`);
  if (req.agentId) clauses.push(`${agentIdKey.name} = ${literal(req.agentId)}`);
  if (req.parentRunId) clauses.push(`ParentWorkflowId = ${literal(req.parentRunId)}`);
  if (req.status) clauses.push(`${runStatusKey.name} = ${literal(req.status)}`);
  // Runs that never waited have no value at all.
  // Approval, input or budget; the attribute is unset while the run waits for none.
  if (req.waiting === true) clauses.push(`${waitingForKey.name} IN (${WAITING_FOR_VALUES.map((v) => `'${v}'`).join(', ')})`);
  if (req.waiting === false) clauses.push(`${waitingForKey.name} IS NULL`);
  return clauses.join(' AND ');
}

/**
 * A page of runs from Temporal visibility, in its order: running runs first, newest start first,
 * then ended runs, most recently ended first. Visibility is eventually consistent, so a run
 * appears there a moment after it starts. The database adds what visibility lacks (the
 * run's creation time, and the outcome once it has ended).
 */
export async function listRuns(deps: { db: Db; client: Client }, req: ListRunsRequest): Promise<RunPage> {
  const query = runListQuery(req);
  const nextPageToken = req.cursor ? decodeCursor(req.cursor, query) : undefined;
  const response = await deps.client.withDeadline(Date.now() + LIST_DEADLINE_MS, () => deps.client.workflowService.listWorkflowExecutions({
    namespace: deps.client.options.namespace, query, pageSize: req.limit, nextPageToken,
  }));
  const executions = response.executions.map((e) => {
    const fields = (e.searchAttributes?.indexedFields ?? {}) as Record<string, Payload>;
    const read = (key: string) => {
      const payload = fields[key];
      const value: unknown = payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
      // Keyword attributes may come back as a one-element list from some visibility stores.
      return Array.isArray(value) ? String(value[0]) : typeof value === 'string' ? value : undefined;
    };
    return {
      id: e.execution?.workflowId ?? '',
      threadId: read(threadIdKey.name) ?? '',
      agentId: read(agentIdKey.name) ?? '',
      status: (read(runStatusKey.name) ?? 'running') as RunStatus,
      startedAt: timestampToIso(e.startTime),
    };
  });
  const stored = await storedRunFacts(deps.db, executions.map((e) => e.id));
  const runs = executions.map((e): RunSummary => {
    const { startedAt, ...visible } = e;
    const facts = stored.get(e.id);
    return {
      ...visible,
      status: facts?.status ?? e.status,
      stopReason: facts?.stopReason ?? null,
      turns: facts?.turns ?? null,
      createdAt: facts?.createdAt ?? startedAt,
      endedAt: facts?.endedAt ?? null,
    };
  });
  const token = response.nextPageToken;
  return { runs, nextCursor: token && token.length > 0 ? encodeCursor(Buffer.from(token), query) : null };
}

function timestampToIso(ts: { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined): string {
  const seconds = typeof ts?.seconds === 'number' ? ts.seconds : (ts?.seconds?.toNumber() ?? 0);
  return new Date(seconds * 1000 + Math.floor((ts?.nanos ?? 0) / 1e6)).toISOString();
}

/**
 * A cursor is Temporal's page token plus a check tied to the query. Temporal answers a token it
 * cannot read with an opaque internal error, so only tokens we issued, for the same filters, reach it.
 */
const cursorCheck = (token: Buffer, query: string) =>
  createHash('sha256').update(query).update('\u0000').update(token).digest().subarray(0, 12).toString('base64url');

function encodeCursor(token: Buffer, query: string): string {
  return `${token.toString('base64url')}.${cursorCheck(token, query)}`;
}

function decodeCursor(cursor: string, query: string): Buffer {
  const [encoded = '', check, ...rest] = cursor.split('.');
  const token = Buffer.from(encoded, 'base64url');
  if (rest.length > 0 || token.length === 0 || check !== cursorCheck(token, query)) {
    throw foreignCursor();
  }
  return token;
}

