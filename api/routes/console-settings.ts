import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

export interface ConsoleSettings {
  /** the Temporal Web UI's base URL (npm start's dev server, or TEMPORAL_UI_URL); absent: the console shows no link */
  temporalUiUrl?: string;
  namespace: string;
}

const consoleSettingsSchema = z.object({
  temporalUiUrl: z.string().nullable()
    .describe('the Temporal Web UI\'s base URL; null: none is configured (TEMPORAL_UI_URL), and the console links no run there'),
  namespace: z.string()
    .describe('the Temporal namespace of the runs: a run\'s workflow is {temporalUiUrl}/namespaces/{namespace}/workflows/{run id}'),
});

/** What the console needs besides the API's data: where a run's workflow can be looked at. */
export const consoleSettingsRoutes: FastifyPluginAsyncZod<ConsoleSettings> = async (app, settings) => {
  app.get('/console/settings', {
    schema: {
      tags: ['console'], summary: 'The console\'s settings: the Temporal Web UI to link runs to',
      response: { 200: consoleSettingsSchema },
    },
  }, async () => ({ temporalUiUrl: settings.temporalUiUrl ?? null, namespace: settings.namespace }));
};
