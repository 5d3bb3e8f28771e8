import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import type { ModelConfig } from '../../core/agent-model';
import type { IntegrationProtocol } from '../../core/protocol-era';
import { createProviders } from '../../llm/providers';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { insertThread } from '../../store/threads/threads';
import { IDEMPOTENCY_KEY, startIdempotentMcpServer, type IdempotentMcpServer } from '../fixtures/idempotent-mcp-server';
import { startTaskHttpServer, type TaskHttpServer } from '../fixtures/task-mcp-server';
import { logger, startEngine, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';
import { waitFor } from '../support/wait';

/**
 * Every MCP tools/call carries `_meta["io.github.durable-agent-engine/idempotency-key"]`:
 * `<runId>/<toolCallId>`, different for every call of a run, also when the model's provider repeats
 * `call_1` in every turn, and the same across a 2026-era call's input rounds.
 */
describe('idempotency keys on MCP tool calls', () => {
  let engine: Engine;
  let server: IdempotentMcpServer;
  let llm: FakeLlmServer;
  let app: FastifyInstance;
  let tasks: TaskHttpServer;

  beforeAll(async () => {
    [server, llm, tasks] = await Promise.all([startIdempotentMcpServer(), startFakeLlmServer(), startTaskHttpServer()]);
    engine = await startEngine('embedded', { providers: createProviders({
      readApiKey: (name) => (name === 'FAKE_LLM_KEY' ? 'fake-key' : undefined), allowedKeyEnvs: ['FAKE_LLM_KEY'], logger,
    }) });
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await engine?.close();
    await Promise.all([server?.close(), llm?.close(), tasks?.close()]);
  });

  const integration = (protocol: IntegrationProtocol, elicitation = false) => insertIntegration(engine.db, {
    name: `idem-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: server.url }, protocol, allowPrivateNetwork: true, elicitation,
  });
  /** what the server recorded of the run's calls: their keys carry the run's id */
  const keysOf = (runId: string, tool?: string) => server.calls
    .filter((c) => String(c.meta[IDEMPOTENCY_KEY] ?? '').startsWith(`${runId}/`) && (!tool || c.tool === tool))
    .map((c) => c.meta[IDEMPOTENCY_KEY]);

  test.each(['2025-11-25', '2026-07-28'] as const)('%s: each call carries <runId>/<toolCallId>, a key of its own', async (protocol) => {
    const fx = await integration(protocol);
    const before = server.calls.length;
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: `${fx.name}__append`, arguments: {} }, { name: `${fx.name}__charge`, arguments: { amount: 3 } }] },
      { toolCalls: [{ name: `${fx.name}__append`, arguments: {} }] },
      { text: 'done' },
    ], { integrationIds: [fx.id] });
    const runId = await engine.start({ threadId, input: 'go' });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
    expect(result.toolCalls.map((c) => c.status)).toEqual(['ok', 'ok', 'ok']);

    const sent = server.calls.slice(before);
    expect(sent).toHaveLength(3);
    expect(sent.map((c) => c.meta[IDEMPOTENCY_KEY]).sort()).toEqual(result.toolCalls.map((c) => `${runId}/${c.id}`).sort());
    expect(new Set(sent.map((c) => c.meta[IDEMPOTENCY_KEY])).size).toBe(3);
  });

  test('2026-07-28: a call whose question waits durably carries its one key in both rounds, before and after the answer', async () => {
    const fx = await integration('2026-07-28', true);
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: `${fx.name}__confirm`, arguments: { what: 'deploy' } }] },
      { text: 'after: {{tool_results}}' },
    ], { integrationIds: [fx.id] });
    const runId = await engine.start({ threadId, input: 'go' });
    let inputId = '';
    const pending = async () => (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingInputs: { inputId: string }[] }>();
    await waitFor(async () => Boolean(inputId = (await pending()).pendingInputs[0]?.inputId ?? ''), 60_000, 'the question');
    const answered = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${inputId}`, payload: { action: 'accept', content: { ok: true } } });
    expect(answered.statusCode).toBe(200);
    const result = await engine.result(runId);
    expect(result.output).toBe('after: deploy: confirmed');

    const rounds = server.calls.filter((c) => c.tool === 'confirm' && String(c.meta[IDEMPOTENCY_KEY]).startsWith(`${runId}/`));
    // The first round asked; the second, sent by another activity once the answer came, carried it.
    expect(rounds.map((c) => [c.meta[IDEMPOTENCY_KEY], c.answered])).toEqual([
      [`${runId}/${result.toolCalls[0].id}`, false], [`${runId}/${result.toolCalls[0].id}`, true],
    ]);
  });

  test.each(['2025-11-25', '2026-07-28'] as const)('%s: a call the server runs as a task carries its key too', async (protocol) => {
    const fx = await insertIntegration(engine.db, {
      name: `tasks-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: tasks.url }, protocol, allowPrivateNetwork: true,
    });
    const before = tasks.calls().length;
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: `${fx.name}__slow_report`, arguments: { seconds: 1 } }] }, { text: '{{tool_results}}' },
    ], { integrationIds: [fx.id] });
    const runId = await engine.start({ threadId, input: 'go' });
    const result = await engine.result(runId);
    expect(result.output).toBe('report ready after 1s');
    expect(tasks.calls().slice(before)).toEqual([{ name: 'slow_report', askedForTask: true }]);
    expect(tasks.metas().slice(before).map((m) => m[IDEMPOTENCY_KEY])).toEqual([`${runId}/${result.toolCalls[0].id}`]);
  });

  test('a provider that repeats call_1 in every turn: the calls are stored under ids unique in the run, and their keys differ', async () => {
    const fx = await integration('2025-11-25');
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fx.id],
      model: { provider: 'openai', name: 'fake-model', baseUrl: llm.baseUrl, apiKeyEnv: 'FAKE_LLM_KEY' } as ModelConfig,
    });
    const thread = await insertThread(engine.db, agent.id);
    const before = llm.requests.length;
    const append = { id: 'call_1', name: `${fx.name}__append`, args: {} };
    // (Within one streamed reply the AI SDK itself renames a repeated id: the repeats that reach the engine are across turns.)
    llm.play([{ toolCalls: [append] }, { toolCalls: [append] }, { toolCalls: [append, { id: 'call_2', name: `${fx.name}__charge`, args: {} }] }, { text: 'three turns' }]);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'three turns', turns: 4 });

    const ids = result.toolCalls.map((c) => c.id);
    expect(ids).toEqual(['call_1', 'call_1-t2', 'call_1-t3', 'call_2']);
    expect(keysOf(runId).sort()).toEqual(ids.map((id) => `${runId}/${id}`).sort());
    // The model reads each call's result under the call's stored id.
    const lastAsk = JSON.stringify(llm.requests[before + 3].body);
    for (const id of ids) expect(lastAsk).toContain(`"tool_call_id":"${id}"`);
    // The events name the calls alike.
    const started = (await listEvents(engine.db, runId)).filter((e) => e.type === 'tool_call_started').map((e) => e.data.toolCallId);
    expect(started).toEqual(ids);
  });
});
