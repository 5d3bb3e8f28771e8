import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../api/app';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { logger } from '../support/engine';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const API_KEY = 'run-messages-key-0123456789';

/**
 * GET /v1/runs/:id/messages: a run's conversation while it runs (the thread's messages have it only
 * once the run ends) and after, against a real engine with a real MCP server; the LLM is scripted.
 */
describe('a run\'s conversation', () => {
  let api: ApiEngine;
  let keyed: FastifyInstance | undefined;

  beforeAll(async () => {
    api = await startApiEngine('embedded', { rateLimitPerMinute: 0 });
    keyed = await buildApp({ db: api.engine.db, client: api.engine.client, taskQueue: api.engine.taskQueue, logger, apiKey: API_KEY, rateLimitPerMinute: 0 });
  });
  afterAll(async () => {
    await keyed?.close();
    await stopApiEngine(api);
  });

  const inject = (options: InjectOptions) => api.app.inject(options);
  const json = (res: LightMyRequestResponse) => res.json();
  const messagesOf = async (runId: string, query = '') => {
    const res = await inject({ method: 'GET', url: `/v1/runs/${runId}/messages${query}` });
    expect(res.statusCode).toBe(200);
    return json(res);
  };

  async function startRun(script: ScriptStep[], input: string, integrationIds: string[] = []): Promise<{ runId: string; threadId: string }> {
    const agent = await insertAgent(api.engine.db, { name: `agent-${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script }, integrationIds });
    const thread = await insertThread(api.engine.db, agent.id);
    return { runId: await api.engine.start({ threadId: thread.id, input }), threadId: thread.id };
  }

  test('while a tool call waits for approval, the run\'s input, the model\'s reply and its call are there; the result comes once it ends', async () => {
    const fx = await insertIntegration(api.engine.db, {
      name: `fx-${randomUUID().slice(0, 8)}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const { runId, threadId } = await startRun([
      { text: 'I will echo it.', toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi there' } }] },
      { text: 'Done: {{tool_results}}' },
    ], 'please echo hi there', [fx.id]);
    await waitFor(async () => json(await inject({ method: 'GET', url: `/v1/runs/${runId}` })).pendingApprovals.length > 0, 30_000, 'the approval');

    const waiting = await messagesOf(runId);
    expect(waiting.input).toEqual({ content: 'please echo hi there', contentBytes: 20, contentTruncated: false });
    expect(waiting.nextAfter).toBeNull();
    expect(waiting.messages).toEqual([{
      turn: 1, slot: 0, role: 'assistant', content: 'I will echo it.', contentBytes: 15, contentTruncated: false, createdAt: expect.any(String),
      toolCalls: [{ id: expect.any(String), name: `${fx.name}__echo`, arguments: '{"text": "hi there"}', argumentsBytes: 20, argumentsTruncated: false }],
    }]);
    // Which is what the thread's messages cannot show yet.
    expect(json(await inject({ method: 'GET', url: `/v1/threads/${threadId}/messages` })).messages).toEqual([]);

    const callId = waiting.messages[0].toolCalls[0].id;
    const decided = await inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${callId}`, payload: { decision: 'approve' } });
    expect(decided.statusCode).toBe(200);
    expect((await api.engine.result(runId)).status).toBe('completed');

    const ended = await messagesOf(runId);
    expect(ended.messages.map((m: Record<string, unknown>) => [m.turn, m.slot, m.role, m.content])).toEqual([
      [1, 0, 'assistant', 'I will echo it.'],
      [1, 1, 'tool', 'echo: hi there'],
      [2, 0, 'assistant', 'Done: echo: hi there'],
    ]);
    expect(ended.messages[1]).toMatchObject({ toolCallId: callId, toolName: `${fx.name}__echo` });

    const first = await messagesOf(runId, '?limit=2');
    expect(first.messages).toEqual(ended.messages.slice(0, 2));
    expect(first.nextAfter).toBe('1.1');
    expect(await messagesOf(runId, `?after=${first.nextAfter}&limit=2`)).toEqual({ input: ended.input, messages: ended.messages.slice(2), nextAfter: null });
  }, 60_000);

  test('long texts are cut with their full size; an unknown run is a 404, a malformed place a 400', async () => {
    const big = 'é'.repeat(3_000);
    const { runId } = await startRun([{ toolCalls: [{ name: 'no_such_tool', arguments: { text: big } }] }, { text: 'done' }], `look: ${big}`);
    await api.engine.result(runId);
    const { input, messages } = await messagesOf(runId);
    expect(input).toMatchObject({ contentBytes: 6 + 6_000, contentTruncated: true });
    expect(input.content).toHaveLength(2_000);
    expect(messages[0].toolCalls[0]).toMatchObject({ argumentsBytes: Buffer.byteLength(`{"text": "${big}"}`), argumentsTruncated: true });
    expect(messages[0].toolCalls[0].arguments).toHaveLength(2_000);
    expect(messages[1].content).toMatch(/^A tool with the name no_such_tool was not found/);

    const unknown = await inject({ method: 'GET', url: '/v1/runs/run_nope/messages' });
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown).code).toBe('not_found');
    for (const query of ['?after=1', '?after=-1.0', '?limit=201', '?after=1.1.1']) {
      const res = await inject({ method: 'GET', url: `/v1/runs/${runId}/messages${query}` });
      expect([query, res.statusCode, res.headers['content-type']]).toEqual([query, 400, expect.stringMatching(/^application\/problem\+json/)]);
    }
  }, 60_000);

  test('/docs describes it: its query and its answer', async () => {
    const doc = json(await inject({ method: 'GET', url: '/docs/json' }));
    const route = doc.paths['/v1/runs/{id}/messages'].get;
    expect(route.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['after', 'id', 'limit']);
    const answer = route.responses['200'].content['application/json'].schema;
    expect(Object.keys(answer.properties).sort()).toEqual(['input', 'messages', 'nextAfter']);
    expect(Object.keys(answer.properties.messages.items.properties)).toEqual(expect.arrayContaining(['turn', 'slot', 'role', 'content', 'toolCalls', 'toolCallId']));
    expect(Object.keys(route.responses).sort()).toEqual(['200', '400', '404']);
  });

  test('it needs the API key, like GET /v1/runs/:id', async () => {
    const { runId } = await startRun([{ text: 'kept' }], 'secret input');
    await api.engine.result(runId);
    const anonymous = await keyed!.inject({ method: 'GET', url: `/v1/runs/${runId}/messages` });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.body).not.toContain('secret input');
    const withKey = await keyed!.inject({ method: 'GET', url: `/v1/runs/${runId}/messages`, headers: { authorization: `Bearer ${API_KEY}` } });
    expect(withKey.statusCode).toBe(200);
    expect(json(withKey).input.content).toBe('secret input');
  }, 60_000);
});
