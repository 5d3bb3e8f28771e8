import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/client';
import type { Integration } from '../../core/integration';
import { createLogger } from '../../platform/logger';
import { connectIntegration } from '../../mcp-client/connections/connect';
import { MAX_REFERENCE_BYTES } from '../../mcp-client/tool-calls/task-reference';
import { cancelToolTask, pollToolTask, startToolTask, TaskReferenceError, toolTaskSupport, type StartedToolTask, type ToolTaskStatus } from '../../mcp-client/tool-calls/tasks';
import { APPROVAL_REQUESTS, FAILURE_TEXT, startTaskHttpServer, type TaskHttpServer } from '../fixtures/task-mcp-server';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'task-mcp-server.ts');
const eras = { '2025-11-25': 'legacy', '2026-07-28': 'modern' } as const;
type Era = keyof typeof eras;
const endpoint = { endpointId: 'integration-under-test', maxResultBytes: 64 * 1024 };
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client with the options connect.ts gives the engine's, over HTTP, on one era. */
async function connectHttp(url: string, era: Era): Promise<Client> {
  const client = new Client({ name: 'durable-agent-engine', version: '0.1.0' }, {
    capabilities: {},
    versionNegotiation: { mode: era === '2025-11-25' ? 'legacy' : { pin: era } },
    inputRequired: { autoFulfill: false },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  expect(client.getProtocolEra()).toBe(eras[era]);
  return client;
}

function referenceOf(started: StartedToolTask): string {
  if (!('reference' in started)) throw new Error(`expected a task, got a result: ${JSON.stringify(started.result)}`);
  return started.reference;
}

/** Polls (each time over `client`) until the task leaves `working`, at the interval the poll suggests. */
async function pollUntilSettled(client: Client, reference: string, timeoutMs = 15_000): Promise<ToolTaskStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await pollToolTask(client, reference, endpoint);
    if (status.status !== 'working' || Date.now() > deadline) return status;
    await wait(status.pollIntervalMs ?? 1_000);
  }
}

describe.each(Object.keys(eras) as Era[])('long tool calls as tasks over HTTP, protocol %s', (era) => {
  let server: TaskHttpServer;
  let clients: Client[] = [];
  let tools: Tool[];
  const connect = async () => {
    const client = await connectHttp(server.url, era);
    clients.push(client);
    return client;
  };
  const tool = (name: string) => tools.find((t) => t.name === name)!;

  beforeAll(async () => {
    server = await startTaskHttpServer();
    ({ tools } = await (await connect()).listTools());
  });
  afterEach(async () => {
    await Promise.all(clients.map((c) => c.close()));
    clients = [];
  });
  afterAll(async () => server?.close());

  test('tells which tools may run as tasks', async () => {
    const client = await connect();
    expect(await toolTaskSupport(client, tool('echo'))).toBe(era === '2025-11-25' ? 'none' : 'optional');
    expect(await toolTaskSupport(client, tool('slow_report'))).toBe('optional');
    // 2025: the tool's own declaration; 2026: the extension declares nothing per tool, the server decides per call.
    expect(await toolTaskSupport(client, tool('never_ends'))).toBe(era === '2025-11-25' ? 'required' : 'optional');
  });

  test('a task started on one connection is polled from its reference alone on another, to its result', async () => {
    const first = await connect();
    const started = await startToolTask(first, { name: 'slow_report', arguments: { seconds: 1 } }, { ...endpoint, tool: tool('slow_report') });
    const reference = referenceOf(started);
    // The fixture suggests 200 ms: held to the 1 s floor.
    expect(started).toMatchObject({ pollIntervalMs: 1_000 });
    expect(Buffer.byteLength(reference)).toBeLessThanOrEqual(MAX_REFERENCE_BYTES);
    expect(JSON.parse(reference)).toMatchObject({ endpointId: endpoint.endpointId, generation: era === '2025-11-25' ? 'v1' : 'v2' });
    await first.close();

    // As a new worker would: a new connection, and nothing but the serialized reference.
    const second = await connect();
    expect(await pollToolTask(second, reference, endpoint)).toEqual({ status: 'working', pollIntervalMs: 1_000 });
    expect(await pollUntilSettled(second, reference)).toEqual({ status: 'completed', result: expect.objectContaining({ content: [{ type: 'text', text: 'report ready after 1s' }] }) });
    expect(server.methods).toContain(era === '2025-11-25' ? 'tasks/result' : 'tasks/get');
    const [held] = server.tasks().filter((t) => t.taskId === JSON.parse(reference).taskId);
    expect(held).toMatchObject({ tool: 'slow_report', status: 'completed', era: eras[era] });
    // A result past the caller's bound is not handed on.
    expect(await pollToolTask(second, reference, { ...endpoint, maxResultBytes: 20 })).toEqual({ status: 'failed', message: 'result exceeds 20 bytes' });
  });

  test('a failing task reads as failed, with the server\'s message', async () => {
    const client = await connect();
    const reference = referenceOf(await startToolTask(client, { name: 'failing_task' }, endpoint));
    await wait(400);
    expect(await pollToolTask(client, reference, endpoint)).toEqual({ status: 'failed', message: FAILURE_TEXT });
  });

  test('a cancelled task is recorded cancelled by the server, and reads as cancelled', async () => {
    const client = await connect();
    const started = await startToolTask(client, { name: 'never_ends' }, endpoint);
    // The fixture suggests an hour: held to the 60 s ceiling.
    expect(started).toMatchObject({ pollIntervalMs: 60_000 });
    const reference = referenceOf(started);
    const taskId = JSON.parse(reference).taskId as string;
    expect(server.tasks().find((t) => t.taskId === taskId)?.status).toBe('working');
    await cancelToolTask(await connect(), reference, endpoint);
    expect(server.tasks().find((t) => t.taskId === taskId)?.status).toBe('cancelled');
    expect(await pollToolTask(client, reference, endpoint)).toEqual({ status: 'cancelled' });
    // A finished task cannot be cancelled again: the server's refusal is thrown.
    await expect(cancelToolTask(client, reference, endpoint)).rejects.toThrow(/already cancelled/);
  });

  test('a server that answers a task-augmented call at once gives its result; a tool without tasks answers plainly', async () => {
    const client = await connect();
    const before = server.tasks().length;
    expect(await startToolTask(client, { name: 'quick_report' }, endpoint)).toEqual({ result: expect.objectContaining({ content: [{ type: 'text', text: 'quick report, no task needed' }] }) });
    expect(await startToolTask(client, { name: 'echo', arguments: { text: 'hi' } }, { ...endpoint, tool: tool('echo') }))
      .toEqual({ result: expect.objectContaining({ content: [{ type: 'text', text: 'echo: hi' }] }) });
    expect(server.tasks()).toHaveLength(before);
    // quick_report was asked for a task, and answered at once all the same; echo (2025 era: no task support) was not.
    expect(server.calls().filter((c) => c.name === 'quick_report' || c.name === 'echo').slice(0, 2))
      .toEqual([{ name: 'quick_report', askedForTask: true }, { name: 'echo', askedForTask: era === '2026-07-28' }]);
    await expect(startToolTask(client, { name: 'echo', arguments: { text: 'x'.repeat(100) } }, { ...endpoint, maxResultBytes: 50 })).rejects.toThrow('result exceeds 50 bytes');
  });

  test('a task waiting for input reads as input_required (2026: with the server\'s questions)', async () => {
    const client = await connect();
    const reference = referenceOf(await startToolTask(client, { name: 'needs_approval' }, endpoint));
    const status = await pollToolTask(client, reference, endpoint);
    expect(status).toEqual(era === '2025-11-25'
      ? { status: 'input_required', pollIntervalMs: 1_000 }
      : { status: 'input_required', inputRequests: APPROVAL_REQUESTS, pollIntervalMs: 1_000 });
  });

  test('a task whose id is too long to keep fails to start, and is cancelled rather than left running', async () => {
    const client = await connect();
    await expect(startToolTask(client, { name: 'huge_id' }, endpoint)).rejects.toThrow(TaskReferenceError);
    const held = server.tasks().filter((t) => t.tool === 'huge_id');
    expect(held).toHaveLength(1);
    await waitFor(() => held[0].taskId && server.tasks().find((t) => t.taskId === held[0].taskId)?.status === 'cancelled');
  });

  test('hostile or foreign references are refused with a clear error, not a crash', async () => {
    const client = await connect();
    const refused = (reference: unknown) => pollToolTask(client, reference as string, endpoint);
    await expect(refused('garbage')).rejects.toThrow(new TaskReferenceError('task reference is not JSON'));
    await expect(refused('x'.repeat(MAX_REFERENCE_BYTES + 1))).rejects.toThrow(`task reference exceeds ${MAX_REFERENCE_BYTES} bytes`);
    await expect(refused(42)).rejects.toThrow('task reference is not a string');
    await expect(refused('{"taskId":"t"}')).rejects.toThrow('task reference is not a tool-call task reference');
    const generation = era === '2025-11-25' ? 'v1' : 'v2';
    const wellFormed = (fields: Record<string, unknown>) => JSON.stringify({ endpointId: endpoint.endpointId, generation, taskId: 'no-such-task', originalOperation: 'tools/call', ...fields });
    await expect(refused(wellFormed({ endpointId: 'another-integration' }))).rejects.toThrow('task reference belongs to another MCP server');
    await expect(refused(wellFormed({ originalOperation: 'sampling/createMessage' }))).rejects.toThrow(TaskReferenceError);
    await expect(cancelToolTask(client, 'garbage', endpoint)).rejects.toThrow(TaskReferenceError);
    // Well-formed, but the server holds no such task: its error, thrown.
    await expect(refused(wellFormed({}))).rejects.toThrow(/Task not found/);
    // A reference of the other era: this connection cannot poll it.
    await expect(refused(wellFormed({ generation: generation === 'v1' ? 'v2' : 'v1' }))).rejects.toThrow(/task reference is of the .* era; this connection is to/);
  });
});

async function waitFor(check: () => unknown, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await wait(50);
  }
}

describe.each(Object.keys(eras) as Era[])('long tool calls as tasks over stdio (the engine\'s connection), protocol %s', (era) => {
  const groupsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'task-client-groups-'));
  const logger = createLogger('warn', 'task-client-test');
  let client: Client | undefined;
  afterAll(async () => {
    await client?.close();
    fs.rmSync(groupsDir, { recursive: true, force: true });
  });

  test('starts a task, polls it from its reference to its result, and cancels another', async () => {
    const now = new Date().toISOString();
    const integration: Integration = {
      id: randomUUID(), name: 'tasks', transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
      toolTimeoutMs: 30_000, maxTotalTimeoutMs: null, maxResourceBytes: 1024 * 1024, maxResultBytes: 1024 * 1024, trustAnnotations: false, retryNonIdempotent: false, enabled: true,
      promptInjection: false, disabledPrompts: [], promptArguments: {}, taskQueue: null, approval: null, elicitation: false, elicitationTimeoutMs: 60_000,
      allowPrivateNetwork: false, protocol: era, sampling: 'never', samplingMaxTokens: 1024, taskTimeoutMs: 3_600_000, promptCacheTtlMs: null, maxConcurrentCalls: 10, createdAt: now, updatedAt: now,
    };
    client = await connectIntegration(integration, { groupsDir, logger, timeoutMs: 30_000 });
    expect(client.getProtocolEra()).toBe(eras[era]);
    const options = { ...endpoint, endpointId: integration.id };
    const reference = referenceOf(await startToolTask(client, { name: 'slow_report', arguments: { seconds: 1 } }, options));
    expect(await pollToolTask(client, reference, options)).toMatchObject({ status: 'working' });
    await wait(1_200);
    expect(await pollToolTask(client, reference, options)).toEqual({ status: 'completed', result: expect.objectContaining({ content: [{ type: 'text', text: 'report ready after 1s' }] }) });
    const never = referenceOf(await startToolTask(client, { name: 'never_ends' }, options));
    await cancelToolTask(client, never, options);
    expect(await pollToolTask(client, never, options)).toEqual({ status: 'cancelled' });
    // Polls of one client take turns (ext-tasks adapts a client for one session at a time): all answer.
    const statuses = await Promise.all([reference, never, reference].map((r) => pollToolTask(client!, r, options)));
    expect(statuses.map((s) => s.status)).toEqual(['completed', 'cancelled', 'completed']);
  });
});

/**
 * Jest loads ext-tasks compiled to CommonJS (jest.config.js). A worker loads it as it ships, with
 * import(): ES modules that reach the SDK's ES-module build while the engine holds a Client of its
 * CommonJS one. This runs the same calls in a plain Node process, as the worker does.
 */
test('in a plain Node process, ext-tasks loads with import() and works with the engine\'s CommonJS client', async () => {
  const server = await startTaskHttpServer();
  try {
    const script = `
      const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
      const { startToolTask, pollToolTask } = require('./mcp-client/tool-calls/tasks');
      (async () => {
        const options = { endpointId: 'e', maxResultBytes: 10000 };
        for (const mode of ['legacy', { pin: '2026-07-28' }]) {
          const client = new Client({ name: 'x', version: '1' }, { versionNegotiation: { mode }, inputRequired: { autoFulfill: false } });
          await client.connect(new StreamableHTTPClientTransport(new URL(process.env.TASK_URL)));
          const { reference } = await startToolTask(client, { name: 'slow_report', arguments: { seconds: 0.2 } }, options);
          await new Promise((resolve) => setTimeout(resolve, 500));
          const done = await pollToolTask(client, reference, options);
          const missing = await pollToolTask(client, JSON.stringify({ ...JSON.parse(reference), taskId: 'gone' }), options).catch((e) => e);
          console.log(JSON.stringify({ era: client.getProtocolEra(), text: done.result.content[0].text, error: [missing.name, missing.code] }));
          await client.close();
        }
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, env: { ...process.env, TASK_URL: server.url }, timeout: 60_000 });
    // The server's JSON-RPC error keeps its code across the two builds of the SDK (its errors are brand-checked).
    expect(stdout.trim().split('\n').map((line) => JSON.parse(line))).toEqual([
      { era: 'legacy', text: 'report ready after 0.2s', error: ['JsonRpcResponseError', -32602] },
      { era: 'modern', text: 'report ready after 0.2s', error: ['JsonRpcResponseError', -32602] },
    ]);
  } finally {
    await server.close();
  }
});
