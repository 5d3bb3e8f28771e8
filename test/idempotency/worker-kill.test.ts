import { randomUUID } from 'node:crypto';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { IDEMPOTENCY_KEY, startIdempotentMcpServer, type IdempotentMcpServer } from '../fixtures/idempotent-mcp-server';
import { exited } from '../support/processes';
import { waitFor } from '../support/wait';
import { workerProcesses } from '../support/worker-processes';

/**
 * An integration with `retryNonIdempotent` (the operator's word that its server deduplicates by
 * the idempotency key): the worker is SIGKILLed while two calls of tools that are neither read-only
 * nor idempotent run; another worker retries both with the keys they had. The server's `charge`
 * deduplicates by its key and executes once; its `append` does not, and executes twice.
 */
describe('the idempotency key across a retry after the worker is killed mid-call', () => {
  const h = workerProcesses();
  let server: IdempotentMcpServer;
  beforeAll(async () => {
    server = await startIdempotentMcpServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test.each(['2025-11-25', '2026-07-28'] as const)('%s: the retried calls carry the same keys; the deduplicating server executes once', async (protocol) => {
    const first = h.worker();
    const fx = await insertIntegration(h.engine.db, {
      name: `idem-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: server.url }, protocol, allowPrivateNetwork: true,
      retryNonIdempotent: true,
    });
    const agent = await insertAgent(h.engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fx.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${fx.name}__charge`, arguments: { amount: 7, holdMs: 3_000 } }, { name: `${fx.name}__append`, arguments: { holdMs: 3_000 } }] },
        { text: 'after: {{tool_results}}' },
      ] },
    });
    const thread = await insertThread(h.engine.db, agent.id);
    const runId = await h.engine.start({ threadId: thread.id, input: 'go' });
    const callsOf = (tool: string) => server.calls.filter((c) => c.tool === tool && String(c.meta[IDEMPOTENCY_KEY]).startsWith(`${runId}/`));
    const executed = { charge: server.executions.get('charge') ?? 0, append: server.executions.get('append') ?? 0 };
    await waitFor(async () => callsOf('charge').length === 1 && callsOf('append').length === 1, 90_000, 'both calls at the server');

    // Mid-call: each execution takes 3 s.
    first.kill('SIGKILL');
    await exited(first);
    const second = h.worker();
    const result = await h.engine.result(runId);
    // The next case's calls go to its own worker only.
    second.kill('SIGKILL');
    await exited(second);

    expect(result.toolCalls.map((c) => [c.id, c.status])).toEqual([['call_1_1', 'ok'], ['call_1_2', 'ok']]);
    expect(callsOf('charge').map((c) => c.meta[IDEMPOTENCY_KEY])).toEqual([`${runId}/call_1_1`, `${runId}/call_1_1`]);
    expect(callsOf('append').map((c) => c.meta[IDEMPOTENCY_KEY])).toEqual([`${runId}/call_1_2`, `${runId}/call_1_2`]);
    // The retry of charge got the first execution's result; append ran again.
    expect((server.executions.get('charge') ?? 0) - executed.charge).toBe(1);
    expect((server.executions.get('append') ?? 0) - executed.append).toBe(2);
    expect(result.output).toBe(`after: charge 7: execution ${executed.charge + 1}\nappend line: execution ${executed.append + 2}`);
  }, 240_000);
});
