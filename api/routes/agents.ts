import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { agentCollectionRoutes } from './agent-collection';
import { agentContextRoutes } from './agent-context';
import { agentItemRoutes } from './agent-item';
import type { AgentRouteDeps } from './route-deps';

/** The agents endpoints, in the order /docs lists them. */
export const agentRoutes: FastifyPluginAsyncZod<AgentRouteDeps> = async (app, deps) => {
  await app.register(agentCollectionRoutes, deps);
  await app.register(agentItemRoutes, deps);
  await app.register(agentContextRoutes, deps);
};
