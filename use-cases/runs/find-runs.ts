import type { Client } from '@temporalio/client';
import { EngineError } from '../../core/engine-error';
import type { Db } from '../../store/pool';
import { resolveRef } from '../../store/refs';
import { listRuns, type ListRunsRequest, type RunPage } from './list-runs';
import { listRunsOfBuild } from './list-runs-by-build';
import type { Caller } from '../caller';

export interface FindRunsDeps {
  db: Db;
  client: Client;
}

export interface RunQuery extends Omit<ListRunsRequest, 'agentId' | 'tenantId'> {
  /** the agent, by id or name */
  agentRef?: string;
  /** only the runs whose last turn ran on this Worker Deployment build */
  buildId?: string;
}

/**
 * `GET /v1/runs`: a page of the caller's tenant's runs from Temporal visibility (list-runs.ts), or,
 * for a build, from the database, which records the build each turn ran on (list-runs-by-build.ts).
 */
export async function findRuns(deps: FindRunsDeps, caller: Caller, query: RunQuery): Promise<RunPage> {
  const { agentRef, buildId, ...filters } = query;
  const agentId = agentRef === undefined ? undefined : await resolveRef(deps.db, 'agents', caller.tenantId, agentRef);
  if (agentRef !== undefined && !agentId) throw new EngineError('not_found', `Agent ${agentRef} does not exist`);
  const filtered = { ...filters, tenantId: caller.tenantId, ...(agentId ? { agentId } : {}) };
  if (buildId === undefined) return listRuns(deps, filtered);
  // The build a run's turns ran on is in the database, not in Temporal visibility, which knows who waits.
  if (filters.waiting !== undefined) {
    throw new EngineError('validation', 'buildId and waiting cannot be combined: list a build\'s runs, then read each');
  }
  const { waiting: _waiting, ...byBuild } = filtered;
  return listRunsOfBuild(deps.db, { ...byBuild, buildId });
}
