import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const suffix = () => randomUUID().slice(0, 8);

interface PendingInput { inputId: string; toolCallId: string; mode: string; message: string; requestedSchema?: Record<string, unknown>; url?: string; expiresAt: string }
interface RunBody { status: string; output: string | null; pendingInputs: PendingInput[]; toolCalls: { id: string; status: string }[] }

/**
 * The API and the worker use separate pools and separate LISTEN connections, as separate processes
 * would: an answer reaches the waiting tool call only through PostgreSQL.
 */
describe('MCP elicitation: a server asks, the API answers, the tool call goes on', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let baseUrl: string;

  beforeAll(async () => {
    engine = await startEngine('embedded', { workerDatabaseUrl: testStack().databases.embedded });
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, sseHeartbeatMs: 1_000 });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await engine?.close();
  });

  const request = async <T = Record<string, unknown>>(method: 'GET' | 'POST', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
    return { status: res.statusCode, body: res.json() as T };
  };

  async function integration(transport: Record<string, unknown>, settings: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
    const res = await request<{ id: string; name: string; elicitation: boolean }>('POST', '/v1/integrations', {
      name: `ask-${suffix()}`, transport, elicitation: true, ...settings,
    });
    expect(res.status).toBe(201);
    expect(res.body.elicitation).toBe(true);
    return res.body;
  }
  const fixture = (settings: Record<string, unknown> = {}) => integration(
    { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, settings,
  );

  async function startRun(integrationId: string, toolName: string, args: Record<string, unknown> = {}): Promise<string> {
    const script: ScriptStep[] = [{ toolCalls: [{ name: toolName, arguments: args }] }, { text: '{{tool_results}}' }];
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [integrationId] });
    const thread = await insertThread(engine.db, agent.id);
    const res = await request<{ id: string }>('POST', `/v1/threads/${thread.id}/runs`, { input: 'go' });
    expect(res.status).toBe(202);
    return res.body.id;
  }

  async function pendingInput(runId: string): Promise<PendingInput> {
    let found: PendingInput | undefined;
    await waitFor(async () => {
      found = (await request<RunBody>('GET', `/v1/runs/${runId}`)).body.pendingInputs[0];
      return found !== undefined;
    }, 90_000, 'the run to show a pending input');
    return found!;
  }

  async function ended(runId: string): Promise<RunBody> {
    for (;;) {
      const run = (await request<RunBody>('GET', `/v1/runs/${runId}?waitMs=30000`)).body;
      if (run.status !== 'running') return run;
    }
  }

  test('accepted: the content reaches the server, which reports it; the stream announced the question', async () => {
    const { id, name } = await fixture();
    const runId = await startRun(id, `${name}__ask`, { message: 'Who is asking?' });
    // Follows the run from its start; the stream ends with run_ended.
    const events = fetch(`${baseUrl}/v1/runs/${runId}/events`).then((r) => r.text());
    const input = await pendingInput(runId);
    expect(input).toMatchObject({ mode: 'form', message: 'Who is asking?', requestedSchema: { required: ['name'] } });
    expect(Date.parse(input.expiresAt)).toBeGreaterThan(Date.now());

    const answer = await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'accept', content: { name: 'Ada', count: 3 } });
    expect(answer).toMatchObject({ status: 200, body: { inputId: input.inputId, status: 'accept' } });
    const run = await ended(runId);
    expect(run.output).toBe('answer: accept {"name":"Ada","count":3}');
    expect(run.pendingInputs).toEqual([]);
    expect(run.toolCalls[0]).toMatchObject({ id: input.toolCallId, status: 'ok' });

    const stream = await events;
    expect(stream).toContain('event: input_requested');
    expect(stream).toContain(input.inputId);
    // The answer was relayed and then cleared from the database.
    const { rows } = await engine.db.query('SELECT status, answer FROM run_inputs WHERE input_id = $1', [input.inputId]);
    expect(rows[0]).toEqual({ status: 'accept', answer: null });
    // Answering twice: the first answer won.
    const again = await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'decline' });
    expect(again.status).toBe(409);
  });

  test('invalid content is refused with a 400 naming the field; a valid answer then goes through', async () => {
    const { id, name } = await fixture();
    const runId = await startRun(id, `${name}__ask`);
    const input = await pendingInput(runId);
    const url = `/v1/runs/${runId}/inputs/${input.inputId}`;

    const badEmail = await request<{ detail: string; field?: string }>('POST', url, { action: 'accept', content: { name: 'Ada', email: 'not-an-email' } });
    expect(badEmail.status).toBe(400);
    expect(badEmail.body.detail).toContain('content.email');
    expect(badEmail.body.field).toBe('content.email');
    const missing = await request<{ detail: string }>('POST', url, { action: 'accept', content: { count: 2 } });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toContain("'name'");
    const outOfRange = await request<{ detail: string }>('POST', url, { action: 'accept', content: { name: 'Ada', count: 11 } });
    expect(outOfRange.status).toBe(400);
    expect(outOfRange.body.detail).toContain('content.count');
    const contentWithDecline = await request('POST', url, { action: 'decline', content: { name: 'Ada' } });
    expect(contentWithDecline.status).toBe(400);
    // Still waiting after the refusals.
    expect((await request<RunBody>('GET', `/v1/runs/${runId}`)).body.pendingInputs.map((i) => i.inputId)).toEqual([input.inputId]);

    expect((await request('POST', url, { action: 'accept', content: { name: 'Bo', email: 'bo@example.com' } })).status).toBe(200);
    expect((await ended(runId)).output).toBe('answer: accept {"name":"Bo","email":"bo@example.com"}');
  });

  test('declined: the server hears the decline', async () => {
    const { id, name } = await fixture();
    const runId = await startRun(id, `${name}__ask`);
    const input = await pendingInput(runId);
    expect((await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'decline' })).status).toBe(200);
    expect((await ended(runId)).output).toBe('answer: decline {}');
  });

  const waitingFor = async (runId: string) => (await engine.client.workflow.getHandle(runId).describe()).searchAttributes.waitingFor;

  test('while the question waits inside its call, the run is listed as waiting for input; once answered, it is not', async () => {
    const { id, name } = await fixture();
    const runId = await startRun(id, `${name}__ask`);
    const input = await pendingInput(runId);
    await waitFor(() => listedAsWaiting(app, runId), 15_000, 'the run listed as waiting');
    expect(await waitingFor(runId)).toEqual(['input']);
    expect((await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'decline' })).status).toBe(200);
    expect((await ended(runId)).output).toBe('answer: decline {}');
    await waitFor(async () => !(await listedAsWaiting(app, runId)), 15_000, 'the run no longer listed as waiting');
    expect(((await waitingFor(runId)) ?? []).filter((v) => v !== null)).toEqual([]); // unset (the SDK shows an unset value as null)
  });

  test('a waiting signal for no running call, or malformed, neither lists the run nor fails it', async () => {
    const { id, name } = await fixture();
    const runId = await startRun(id, `${name}__ask`);
    const input = await pendingInput(runId);
    const handle = engine.client.workflow.getHandle(runId);
    await handle.signal('toolCallWaiting', { toolCallId: 'call_not_running', waiting: true });
    await handle.signal('toolCallWaiting', { toolCallId: 5, waiting: true });
    await handle.signal('toolCallWaiting');
    expect((await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'decline' })).status).toBe(200);
    expect(await ended(runId)).toMatchObject({ status: 'completed', output: 'answer: decline {}' });
    await waitFor(async () => !(await listedAsWaiting(app, runId)), 15_000, 'the run no longer listed as waiting');
  });

  test('unanswered within elicitationTimeout: the call declines, and a late answer is refused', async () => {
    const { id, name } = await fixture({ elicitationTimeout: '3s' });
    const runId = await startRun(id, `${name}__ask`);
    const input = await pendingInput(runId);
    const run = await ended(runId);
    expect(run.output).toBe('answer: decline {}');
    const { rows } = await engine.db.query('SELECT status FROM run_inputs WHERE input_id = $1', [input.inputId]);
    expect(rows[0].status).toBe('expired');
    const late = await request<{ code: string }>('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'accept', content: { name: 'Late' } });
    expect(late).toMatchObject({ status: 409, body: { code: 'input_closed' } });
  });

  test('URL mode: the question carries its URL and is answered without content', async () => {
    const { id, name } = await fixture();
    const runId = await startRun(id, `${name}__ask_url`);
    const input = await pendingInput(runId);
    expect(input).toMatchObject({ mode: 'url', message: 'Sign in to continue', url: 'https://example.com/sign-in' });
    const withContent = await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'accept', content: { x: '1' } });
    expect(withContent.status).toBe(400);
    expect((await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, { action: 'accept' })).status).toBe(200);
    expect((await ended(runId)).output).toBe('url answer: accept');
  });

  test("server-everything's trigger-elicitation-request, offered only because elicitation is declared", async () => {
    const { id, name } = await integration({ type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], cwd: ROOT });
    const runId = await startRun(id, `${name}__trigger-elicitation-request`);
    const input = await pendingInput(runId);
    expect(input.message).toBe('Please provide inputs for the following fields:');
    const res = await request('POST', `/v1/runs/${runId}/inputs/${input.inputId}`, {
      action: 'accept', content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com', integer: 7 },
    });
    expect(res.status).toBe(200);
    const run = await ended(runId);
    expect(run.output).toContain('User provided the requested information');
    expect(run.output).toContain('- Name: Ada Lovelace');
    expect(run.output).toContain('- Favorite Integer: 7');
  });

  test('without elicitation, the server is not asked and its tool reports that it cannot ask', async () => {
    const res = await request<{ id: string; name: string }>('POST', '/v1/integrations', {
      name: `plain-${suffix()}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const runId = await startRun(res.body.id, `${res.body.name}__ask`);
    const run = await ended(runId);
    expect(run.output).toMatch(/^MCP tool execution failed: .*elicitation/);
    expect(run.pendingInputs).toEqual([]);
  });

  test('the settings: a bad elicitationTimeout is a 400, and the integration shows its settings', async () => {
    const bad = await request<{ detail: string }>('POST', '/v1/integrations', {
      name: `bad-${suffix()}`, transport: { type: 'http', url: 'http://127.0.0.1:9/mcp' }, elicitation: true, elicitationTimeout: '0s',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('elicitationTimeout');
    const good = await request('POST', '/v1/integrations', {
      name: `good-${suffix()}`, transport: { type: 'http', url: 'http://127.0.0.1:9/mcp' }, elicitation: true, elicitationTimeout: '90s',
    });
    expect(good.body).toMatchObject({ elicitation: true, elicitationTimeout: '90s' });
    const imported = await request<{ integrations: Record<string, unknown>[] }>('POST', '/v1/integrations/import', {
      mcpServers: { [`imp-${suffix()}`]: { url: 'http://127.0.0.1:9/mcp', elicitation: true, elicitationTimeout: '2m' } },
    });
    expect(imported.status).toBe(201);
    expect(imported.body.integrations[0]).toMatchObject({ elicitation: true, elicitationTimeout: '2m' });
  });
});
