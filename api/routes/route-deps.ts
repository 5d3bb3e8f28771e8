import type { Client } from '@temporalio/client';
import type { FastifyRequest } from 'fastify';
import type { ApprovalKeyKind } from '../../core/approval';
import type { Logger } from '../../platform/logger';
import type { AgentDeps } from '../../use-cases/agents/agents';
import type { ImportDeps } from '../../use-cases/integrations/import-integrations';
import type { RunControlDeps } from '../../use-cases/runs/runs';
import type { RunViewCache } from '../../use-cases/runs/run-view-cache';
import type { StartRunDeps } from '../../use-cases/runs/start-run';

/** What buildApp gives each group of routes whose endpoints are split over several files. */

export interface AgentRouteDeps extends AgentDeps {
  taskQueue: string;
  /** bound on GET /agents/:id/context's wait for a worker */
  contextWaitMs?: number;
}

export interface IntegrationRoutesOptions extends ImportDeps {
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** how long GET …/capabilities waits for a worker */
  capabilitiesWaitMs: number;
}

export interface RunRouteDeps extends StartRunDeps, RunControlDeps {
  /** where GET /v1/runs/:id reads (see AppDeps.reads) */
  reads: RunControlDeps['db'];
  /** the run objects this process has read, until their runs change */
  views: RunViewCache;
  /** which key a request carries, recorded with an approval decision */
  keyKind: (request: FastifyRequest) => ApprovalKeyKind;
}
