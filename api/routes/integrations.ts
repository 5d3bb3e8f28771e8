import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { integrationCapabilityRoutes } from './integration-capabilities';
import { integrationCollectionRoutes } from './integration-collection';
import { integrationImportRoutes } from './integration-import';
import { integrationItemRoutes } from './integration-item';
import type { IntegrationRoutesOptions } from './route-deps';

/** The integrations endpoints, in the order /docs lists them (OAuth's are integration-oauth.ts's). */
export const integrationRoutes: FastifyPluginAsyncZod<IntegrationRoutesOptions> = async (app, opts) => {
  await app.register(integrationCollectionRoutes, opts);
  await app.register(integrationItemRoutes, opts);
  await app.register(integrationImportRoutes, opts);
  await app.register(integrationCapabilityRoutes, opts);
};
