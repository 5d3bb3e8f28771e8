import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { CAPABILITIES_WORKFLOW_TYPE } from '../../core/run';
import { insertIntegration } from '../../store/integrations/integrations';
import { fetchCapabilities } from '../../use-cases/worker-questions';
import { logger, startEngine, type Engine } from '../support/engine';
import { waitFor, within } from '../support/wait';

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

  test('a caller gone while the question was being started is not waited for: the API answers without the worker and ends the question', async () => {
    // The tab closed (or the API began to close) during the workflow's start: Temporal's client
    // cancels a call when its signal aborts, never a call begun under a signal aborted already.
    const integration = await insertIntegration(engine.db, {
      name: `silent-${Date.now()}`, transport: { type: 'http', url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp` }, allowPrivateNetwork: true,
    });
    const asked = fetchCapabilities({ client: engine.client, taskQueue: engine.taskQueue, logger, waitMs: 60_000, callerGone: AbortSignal.abort() }, { ...integration, taskQueue: null })
      .then(() => 'answered', (err: Error) => err.message);
    // Well within the server's 20 s and the question's 60 s: the API does not wait at all.
    expect(await within(asked, 15_000, 'still waiting for the worker')).toMatch(/^No worker listed the capabilities/);
    await waitFor(async () => {
      const statuses = await running(integration.id);
      return statuses.length === 1 && statuses[0] === 'TERMINATED';
    }, 5_000, 'the question ended');
  });
});
