import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { CAPABILITIES_WORKFLOW_TYPE } from '../../core/run';
import { insertIntegration } from '../../store/integrations/integrations';
import { logger, startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';

/**
 * A question the API asks a worker (an integration's tools) is for its caller alone: when the
 * caller goes away (a closed tab), the API stops waiting and ends the worker's workflow, instead of
 * holding both until its own bound.
 */
describe('a caller that goes away', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let url: string;
  let silent: http.Server;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, capabilitiesWaitMs: 60_000 });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
    // A server that takes connections and never answers.
    silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    silent?.closeAllConnections();
    await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
    await app?.close();
    await engine?.close();
  });

  const running = async (integrationId: string) => {
    const found: string[] = [];
    for await (const w of engine.client.workflow.list({ query: `WorkflowType = '${CAPABILITIES_WORKFLOW_TYPE}'` })) {
      if (w.workflowId.startsWith(`capabilities-${integrationId}-`)) found.push(w.status.name);
    }
    return found;
  };

  test('ends the worker\'s question about an integration\'s tools at once, not at the API\'s bound', async () => {
    const integration = await insertIntegration(engine.db, {
      name: `silent-${Date.now()}`, transport: { type: 'http', url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp` }, allowPrivateNetwork: true,
    });
    const caller = new AbortController();
    const asked = fetch(`${url}/v1/integrations/${integration.id}/capabilities`, { signal: caller.signal }).catch((err: Error) => err);
    await waitFor(async () => (await running(integration.id)).includes('RUNNING'), 15_000, 'the worker\'s question');
    caller.abort();
    expect((await asked as Error).name).toBe('AbortError');
    await waitFor(async () => {
      const statuses = await running(integration.id);
      return statuses.length === 1 && statuses[0] === 'TERMINATED';
    }, 5_000, 'the question ended');
  });
});
