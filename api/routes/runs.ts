import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { runApprovalRoutes } from './run-approvals';
import { runBudgetRoutes } from './run-budget';
import { runCancelRoutes } from './run-cancel';
import { runReadRoutes } from './run-read';
import { runStartRoutes } from './run-start';
import { runToolResultRoutes } from './run-tool-results';
import type { RunRouteDeps } from './route-deps';

/** Starting, reading, deciding, answering and cancelling runs, in the order /docs lists them. */
export const runRoutes: FastifyPluginAsyncZod<RunRouteDeps> = async (app, deps) => {
  await app.register(runStartRoutes, deps);
  await app.register(runReadRoutes, deps);
  await app.register(runApprovalRoutes, deps);
  await app.register(runBudgetRoutes, deps);
  await app.register(runToolResultRoutes, deps);
  await app.register(runCancelRoutes, deps);
};
