import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import type { ElicitRequest, Notification } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { toolNameOf } from '../../mcp-server/agent-server';
import { decodeReference } from '../../mcp-client/tool-calls/task-reference';
import { answerToolTask, pollToolTask, startToolTask, type ToolTaskStatus } from '../../mcp-client/tool-calls/tasks';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { startEngine, type Engine } from '../support/engine';
import { mcpStdioTransport } from '../support/cli';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const endpoint = { endpointId: 'agent-engine-stdio', maxResultBytes: 256 * 1024 };
const suffix = () => randomUUID().slice(0, 8);

/**
 * Agents as MCP tasks over `agent-engine mcp` (stdio), where the connection lives: a 2025 client
 * is told each change of a task's status, and is asked the run's approvals while it waits in
 * tasks/result; a 2026 client answers them with tasks/update. Real Temporal, PostgreSQL, the CLI.
 */
describe('agent runs as MCP tasks over stdio', () => {
  let engine: Engine;
  let approver: string;
  let clients: Client[] = [];

  beforeAll(async () => {
    engine = await startEngine('embedded');
    const integration = await insertIntegration(engine.db, {
      name: `ts${suffix()}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    approver = toolNameOf((await insertAgent(engine.db, {
      name: `stdio_approver_${suffix()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'launch' } }] },
        { text: 'result: {{tool_results}}' },
      ] },
    })).name);
  }, 120_000);
  afterEach(async () => {
    await Promise.all(clients.map((c) => c.close()));
    clients = [];
  });
  afterAll(async () => engine?.close());

  async function connect(era: 'legacy' | 'modern', asked: ElicitRequest['params'][] = []): Promise<Client> {
    const client = new Client({ name: 'stdio-task-test', version: '1.0.0' }, {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: era === 'legacy' ? 'legacy' : { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false },
    });
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { decision: 'approve', reason: 'fine by me' } };
    });
    await client.connect(mcpStdioTransport(engine.taskQueue));
    clients.push(client);
    return client;
  }

  async function startTask(client: Client): Promise<{ reference: string; taskId: string }> {
    const tool = (await client.listTools()).tools.find((t) => t.name === approver)!;
    const started = await startToolTask(client, { name: approver, arguments: { input: 'go' } }, { ...endpoint, tool });
    if (!('reference' in started)) throw new Error(`expected a task, got ${JSON.stringify(started.result)}`);
    return { reference: started.reference, taskId: decodeReference(started.reference, endpoint.endpointId).taskId };
  }

  test('2025: status changes are notified, and the approval is asked during tasks/result, naming the task', async () => {
    const asked: ElicitRequest['params'][] = [];
    const client = await connect('legacy', asked);
    const notices: Notification[] = [];
    const { taskId } = await startTask(client);
    client.fallbackNotificationHandler = async (n) => {
      notices.push(n);
    };
    const statuses = () => notices.filter((n) => n.method === 'notifications/tasks/status' && n.params?.taskId === taskId).map((n) => n.params?.status);
    await waitFor(async () => statuses().includes('input_required'), 60_000, 'an input_required notice');

    const result = await client.request({ method: 'tasks/result', params: { taskId } }, z.looseObject({}));
    expect(result).toMatchObject({
      content: [{ type: 'text', text: expect.stringContaining('launch') }],
      _meta: { runId: taskId, 'io.modelcontextprotocol/related-task': { taskId } },
    });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ message: expect.stringContaining('Approve this tool call?'), _meta: { 'io.modelcontextprotocol/related-task': { taskId } } });
    const { rows } = await engine.db.query('SELECT status, key_kind FROM run_approvals WHERE run_id = $1', [taskId]);
    expect(rows).toMatchObject([{ status: 'approved', key_kind: 'mcp_client' }]);
    await waitFor(async () => statuses().includes('completed'), 30_000, 'a completed notice');
    expect(statuses().indexOf('input_required')).toBeLessThan(statuses().indexOf('completed'));
  });

  test('2026: the approval is read from tasks/get and answered with tasks/update', async () => {
    const client = await connect('modern');
    const { reference } = await startTask(client);
    let status: ToolTaskStatus = { status: 'working' };
    await waitFor(async () => (status = await pollToolTask(client, reference, endpoint)).status === 'input_required', 60_000, 'the question');
    const [key] = Object.keys((status as unknown as { inputRequests: Record<string, unknown> }).inputRequests);
    await answerToolTask(client, reference, { [key]: { action: 'accept', content: { decision: 'approve' } } }, endpoint);
    await waitFor(async () => (status = await pollToolTask(client, reference, endpoint)).status === 'completed', 60_000, 'the result');
    expect(status).toMatchObject({ result: { content: [{ text: expect.stringContaining('launch') }] } });
    // The same answer again: the question is gone.
    await expect(answerToolTask(client, reference, { [key]: { action: 'accept', content: { decision: 'deny' } } }, endpoint))
      .rejects.toMatchObject({ code: -32602 });
  });
});
