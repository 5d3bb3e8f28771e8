import { randomUUID } from 'node:crypto';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startTaskHttpServer, type TaskHttpServer } from '../fixtures/task-mcp-server';
import { exited } from '../support/processes';
import { waitFor } from '../support/wait';
import { workerProcesses } from '../support/worker-processes';

/**
 * A task is the server's and its reference is in PostgreSQL: the worker polling it is SIGKILLed,
 * another starts (a `npm run worker` process, which loads the tasks library with a real import()),
 * and the run goes on polling the same task to its result. The call is never sent again.
 */
describe('a tool call running as a task survives its worker', () => {
  const h = workerProcesses();
  let server: TaskHttpServer;
  beforeAll(async () => {
    server = await startTaskHttpServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test.each(['2025-11-25', '2026-07-28'] as const)('%s: the worker is SIGKILLed while the task works; a new worker polls it to its result', async (protocol) => {
    const first = h.worker();
    const i = await insertIntegration(h.engine.db, {
      name: `tasks-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: server.url }, protocol, allowPrivateNetwork: true,
    });
    const agent = await insertAgent(h.engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [i.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${i.name}__slow_report`, arguments: { seconds: 6 } }] }, { text: 'after: {{tool_results}}' }] },
    });
    const thread = await insertThread(h.engine.db, agent.id);
    const calls = server.calls().length;
    const runId = await h.engine.start({ threadId: thread.id, input: 'go' });
    await waitFor(async () => (await h.engine.db.query('SELECT 1 FROM run_tool_tasks WHERE run_id = $1', [runId])).rowCount === 1, 90_000, 'the task stored');

    first.kill('SIGKILL');
    await exited(first);
    h.worker();
    const result = await h.engine.result(runId);
    expect(result.output).toBe('after: report ready after 6s');
    expect(server.calls().slice(calls)).toEqual([{ name: 'slow_report', askedForTask: true }]);
  }, 240_000);
});
