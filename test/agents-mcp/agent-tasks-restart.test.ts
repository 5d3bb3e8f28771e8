import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toolNameOf } from '../../mcp-server/agent-server';
import { decodeReference, encodeReference } from '../../mcp-client/tool-calls/task-reference';
import { pollToolTask, startToolTask, type ToolTaskStatus } from '../../mcp-client/tool-calls/tasks';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { restartableTemporal } from '../support/restartable-temporal';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const endpoint = { endpointId: 'agent-engine-restarted', maxResultBytes: 256 * 1024 };

/**
 * A task is its run: the whole engine (worker, API, Temporal server) stops and starts again while
 * the task waits for an approval, and fresh clients, of either era, find it where it was.
 */
describe('an agent task across a restart of the whole engine', () => {
  const h = restartableTemporal('agent-task-restart');
  const clients: Client[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  // Each API process the harness builds listens once, on a port of its own.
  const listening = new WeakMap<object, Promise<string>>();
  const urlOf = () => {
    if (!listening.has(h.app)) listening.set(h.app, h.app.listen({ host: '127.0.0.1', port: 0 }));
    return listening.get(h.app)!;
  };

  async function connect(era: 'legacy' | 'modern'): Promise<Client> {
    const url = `${await urlOf()}/mcp`;
    const client = new Client({ name: 'restart-test', version: '1.0.0' }, {
      capabilities: {}, versionNegotiation: { mode: era === 'legacy' ? 'legacy' : { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false },
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
    return client;
  }

  test('started on the 2026 era, waiting for approval through the restart, finished and read on both eras', async () => {
    const integration = await insertIntegration(h.db, {
      name: `rs${randomUUID().slice(0, 8)}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const tool = toolNameOf((await insertAgent(h.db, {
      name: `restart_approver_${randomUUID().slice(0, 8)}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'survived' } }] },
        { text: 'result: {{tool_results}}' },
      ] },
    })).name);
    const modern = await connect('modern');
    const started = await startToolTask(modern, { name: tool, arguments: { input: 'go' } }, endpoint);
    if (!('reference' in started)) throw new Error(`expected a task, got ${JSON.stringify(started.result)}`);
    const { taskId } = decodeReference(started.reference, endpoint.endpointId);
    await waitFor(async () => (await pollToolTask(modern, started.reference, endpoint)).status === 'input_required', 60_000, 'the approval question');

    await h.restartAll();

    // A 2025 client, on the new API process, sees the same task waiting, and the REST API decides it.
    const legacy = await connect('legacy');
    const legacyRef = encodeReference({ endpointId: endpoint.endpointId, generation: 'v1', taskId, originalOperation: 'tools/call' });
    expect(await pollToolTask(legacy, legacyRef, endpoint)).toMatchObject({ status: 'input_required' });
    const run = (await h.app.inject({ method: 'GET', url: `/v1/runs/${taskId}` })).json();
    const decided = await h.app.inject({ method: 'POST', url: `/v1/runs/${taskId}/approvals/${run.pendingApprovals[0].toolCallId}`, payload: { decision: 'approve' } });
    expect(decided.statusCode).toBe(200);

    const fresh = await connect('modern');
    let status: ToolTaskStatus = { status: 'working' };
    await waitFor(async () => ['completed', 'failed'].includes((status = await pollToolTask(fresh, started.reference, endpoint)).status), 60_000, 'the result');
    expect(status).toMatchObject({ status: 'completed', result: { content: [{ text: expect.stringContaining('survived') }] } });
    expect(await pollToolTask(legacy, legacyRef, endpoint)).toMatchObject({ status: 'completed', result: { content: [{ text: expect.stringContaining('survived') }] } });
  }, 180_000);
});
