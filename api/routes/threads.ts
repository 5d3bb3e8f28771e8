import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ThreadDeps } from '../../use-cases/threads/threads';
import { threadCollectionRoutes } from './thread-collection';
import { threadItemRoutes } from './thread-item';
import { threadMessageRoutes } from './thread-messages';

/** The threads endpoints, in the order /docs lists them. */
export const threadRoutes: FastifyPluginAsyncZod<ThreadDeps> = async (app, deps) => {
  await app.register(threadCollectionRoutes, deps);
  await app.register(threadItemRoutes, deps);
  await app.register(threadMessageRoutes, deps);
};
