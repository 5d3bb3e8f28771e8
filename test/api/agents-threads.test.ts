import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';
import { seedThreadMessages, upsertFileAgent } from '../../store/agent-files/file-agents';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';

let engine: Engine;
let app: FastifyInstance;

beforeAll(async () => {
  ({ engine, app } = await startApiEngine());
});
afterAll(() => stopApiEngine({ engine, app }));

// Response bodies are checked by assertions, not by the compiler.
const json = (res: LightMyRequestResponse) => res.json();
const inject = (options: InjectOptions) => app.inject(options);
const unique = (prefix: string) => `${prefix}_${randomUUID().slice(0, 8)}`;

async function createAgent(script: ScriptStep[], extra: Record<string, unknown> = {}) {
  const res = await inject({ method: 'POST', url: '/v1/agents', payload: { name: unique('agent'), model: { provider: 'scripted', script }, ...extra } });
  expect(res.statusCode).toBe(201);
  return json(res);
}

async function createIntegration() {
  const res = await inject({ method: 'POST', url: '/v1/integrations', payload: { name: unique('tools'), transport: { type: 'stdio', command: 'true' } } });
  expect(res.statusCode).toBe(201);
  return json(res);
}

async function post(url: string, payload: Record<string, unknown>) {
  return inject({ method: 'POST', url, payload });
}

function expectProblem(res: LightMyRequestResponse, status: number, code?: string, detail?: RegExp) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = json(res);
  if (code) expect(body.code).toBe(code);
  if (detail) expect(body.detail).toMatch(detail);
}

async function runToEnd(threadId: string, payload: Record<string, unknown>) {
  const res = await post(`/v1/threads/${threadId}/runs`, payload);
  expect(res.statusCode).toBe(202);
  return json(await inject({ method: 'GET', url: `/v1/runs/${json(res).id}?waitMs=30000` }));
}

describe('changing and deleting agents', () => {
  test('PATCH changes only the fields given; null clears instructions; names are unique', async () => {
    const tools = await createIntegration();
    const agent = await createAgent([{ text: 'one' }], { instructions: 'Be brief.', description: 'first' });
    const res = await inject({
      method: 'PATCH', url: `/v1/agents/${agent.id}`,
      payload: { instructions: null, maxTurns: 3, model: { provider: 'scripted', script: [{ text: 'two' }] } },
    });
    expect(res.statusCode).toBe(200);
    const patched = json(res);
    expect(patched).toMatchObject({
      id: agent.id, name: agent.name, description: 'first', instructions: null, maxTurns: 3, integrationIds: [],
      model: { provider: 'scripted', script: [{ text: 'two' }] }, sourceFile: null, disabledAt: null,
    });
    expect(patched.updatedAt > agent.updatedAt).toBe(true);
    expect(json(await inject({ method: 'GET', url: `/v1/agents/${agent.id}` }))).toEqual(patched);

    // A run after the change uses the new model.
    const thread = json(await post('/v1/threads', { agentId: agent.id }));
    expect((await runToEnd(thread.id, { input: 'go' })).output).toBe('two');

    const other = await createAgent([{ text: 'x' }]);
    const withTools = await inject({ method: 'PATCH', url: `/v1/agents/${other.name}`, payload: { integrationIds: [tools.name] } });
    expect(json(withTools)).toMatchObject({ id: other.id, integrationIds: [tools.id] });
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${other.id}`, payload: { name: agent.name } }), 409, 'conflict');
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${other.id}`, payload: { model: { provider: 'scripted', script: 'no' } } }), 400, 'validation', /model/);
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${other.id}`, payload: { integrationIds: ['no_such_integration'] } }), 400, 'validation', /no_such_integration/);
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${other.id}`, payload: {} }), 400);
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${other.id}`, payload: { id: 'agt_mine' } }), 400);
    expectProblem(await inject({ method: 'PATCH', url: '/v1/agents/agt_nope', payload: { maxTurns: 2 } }), 404, 'not_found');
  });

  test('an agent without threads is deleted; one with threads is disabled: readable, unlisted, closed to new threads and runs', async () => {
    const lonely = await createAgent([{ text: 'x' }]);
    expect((await inject({ method: 'DELETE', url: `/v1/agents/${lonely.name}` })).statusCode).toBe(204);
    expectProblem(await inject({ method: 'GET', url: `/v1/agents/${lonely.id}` }), 404);
    // The name is free again.
    expect((await post('/v1/agents', { name: lonely.name, model: { provider: 'scripted', script: [] } })).statusCode).toBe(201);

    const used = await createAgent([{ text: 'answer' }]);
    const thread = json(await post('/v1/threads', { agentId: used.id }));
    expect((await runToEnd(thread.id, { input: 'go' })).status).toBe('completed');
    const res = await inject({ method: 'DELETE', url: `/v1/agents/${used.id}` });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toMatchObject({ id: used.id, disabledAt: expect.any(String) });
    expect(json(await inject({ method: 'GET', url: `/v1/agents/${used.id}` })).disabledAt).toBe(json(res).disabledAt);
    expect(json(await inject({ method: 'GET', url: '/v1/agents' })).agents.map((a: { id: string }) => a.id)).not.toContain(used.id);
    expectProblem(await post('/v1/threads', { agentId: used.id }), 409, 'agent_disabled', /was deleted/);
    expectProblem(await post(`/v1/threads/${thread.id}/runs`, { input: 'again' }), 409, 'conflict', /was deleted/);
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${used.id}`, payload: { maxTurns: 2 } }), 409, 'agent_disabled');
    // The thread's history stays readable.
    expect(json(await inject({ method: 'GET', url: `/v1/threads/${thread.id}/messages` })).messages).toHaveLength(2);
    // Deleting again changes nothing.
    expect((await inject({ method: 'DELETE', url: `/v1/agents/${used.id}` })).statusCode).toBe(200);
  });

  test('while a run of the agent is running, PATCH and DELETE answer 409 naming the run', async () => {
    const agent = await createAgent([{ text: 'too late', delayMs: 20_000 }]);
    const thread = json(await post('/v1/threads', { agentId: agent.id }));
    const runId = json(await post(`/v1/threads/${thread.id}/runs`, { input: 'go' })).id;
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${agent.id}`, payload: { maxTurns: 2 } }), 409, 'agent_busy', new RegExp(runId));
    expectProblem(await inject({ method: 'DELETE', url: `/v1/agents/${agent.id}` }), 409, 'agent_busy', new RegExp(runId));
    await post(`/v1/runs/${runId}/cancel`, {});
    expect((await engine.result(runId)).status).toBe('cancelled');
    expect((await inject({ method: 'PATCH', url: `/v1/agents/${agent.id}`, payload: { maxTurns: 2 } })).statusCode).toBe(200);
  });

  test('an agent defined by a file answers 409 naming the file: edit the file instead', async () => {
    const name = unique('filed');
    const sourceFile = `/srv/agents/${name}.chatmd`;
    await upsertFileAgent(engine.db, {
      tenantId: DEFAULT_TENANT_ID, name, sourceFile, description: null, instructions: null, model: { provider: 'scripted', script: [] }, integrationIds: [], maxTurns: 5, template: [],
    });
    const read = json(await inject({ method: 'GET', url: `/v1/agents/${name}` }));
    expect(read).toMatchObject({ name, sourceFile });
    expectProblem(await inject({ method: 'PATCH', url: `/v1/agents/${name}`, payload: { maxTurns: 2 } }), 409, 'defined_by_file',
      new RegExp(`defined by the file ${sourceFile}: edit the file instead`));
    expectProblem(await inject({ method: 'DELETE', url: `/v1/agents/${read.id}` }), 409, 'defined_by_file', /delete the file instead/);
  });
});

describe('names wherever ids are accepted', () => {
  test('integrationIds, a thread\'s agentId, a run\'s agentId and /agents/:id take names', async () => {
    const tools = await createIntegration();
    const agent = await createAgent([{ text: 'first' }], { integrationIds: [tools.name] });
    expect(agent.integrationIds).toEqual([tools.id]);
    // An id and the name of the same integration count once.
    expect((await createAgent([], { integrationIds: [tools.id, tools.name] })).integrationIds).toEqual([tools.id]);
    expect(json(await inject({ method: 'GET', url: `/v1/agents/${agent.name}` })).id).toBe(agent.id);
    expect(json(await inject({ method: 'GET', url: `/v1/integrations/${tools.name}` })).id).toBe(tools.id);
    expectProblem(await inject({ method: 'DELETE', url: `/v1/integrations/${tools.name}` }), 409, 'in_use', new RegExp(agent.name));

    const threadRes = await post('/v1/threads', { agentId: agent.name });
    expect(threadRes.statusCode).toBe(201);
    expect(json(threadRes).agentId).toBe(agent.id);
    const second = await createAgent([{ text: 'second' }]);
    const run = await runToEnd(json(threadRes).id, { input: 'go', agentId: second.name });
    expect(run).toMatchObject({ agentId: second.id, output: 'second' });

    expectProblem(await post('/v1/threads', { agentId: 'no-such-agent' }), 404, 'not_found', /no-such-agent/);
    expectProblem(await post('/v1/agents', { name: unique('a'), model: { provider: 'scripted', script: [] }, integrationIds: ['nope'] }), 400, 'validation', /nope/);
  });
});

describe('reading conversations', () => {
  test('GET /v1/threads pages newest first and filters by agent id or name', async () => {
    const agent = await createAgent([{ text: 'hi' }]);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(json(await post('/v1/threads', { agentId: agent.id })).id);
    await runToEnd(ids[4], { input: 'hello' });

    const pages = [];
    let cursor: string | null = null;
    do {
      const res = await inject({ method: 'GET', url: `/v1/threads?agentId=${agent.name}&limit=2${cursor ? `&cursor=${cursor}` : ''}` });
      expect(res.statusCode).toBe(200);
      pages.push(json(res));
      cursor = json(res).nextCursor;
    } while (cursor && pages.length < 10);
    expect(pages.map((p) => p.threads.length)).toEqual([2, 2, 1]);
    const listed = pages.flatMap((p) => p.threads);
    expect(listed.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect(listed[0]).toMatchObject({ agentId: agent.id, agentName: agent.name, messageCount: 2, lastMessageAt: expect.any(String) });
    expect(listed[1]).toMatchObject({ messageCount: 0, lastMessageAt: null });

    const all = json(await inject({ method: 'GET', url: '/v1/threads?limit=100' }));
    expect(all.threads.map((t: { id: string }) => t.id)).toEqual(expect.arrayContaining(ids));
    // Without the agent's filter, a cursor pages on from the same place: the newest two, then the next two.
    const first = json(await inject({ method: 'GET', url: '/v1/threads?limit=2' }));
    const second = json(await inject({ method: 'GET', url: `/v1/threads?limit=2&cursor=${first.nextCursor}` }));
    const idsOf = (threads: { id: string }[]) => threads.map((t) => t.id);
    expect(idsOf([...first.threads, ...second.threads])).toEqual(idsOf(all.threads.slice(0, 4)));
    expectProblem(await inject({ method: 'GET', url: '/v1/threads?agentId=no-such-agent' }), 404);
    expectProblem(await inject({ method: 'GET', url: '/v1/threads?cursor=bm90LWEtY3Vyc29y' }), 400);
  });

  test('a run by another agent on a thread is visible: each message names the agent of the run that wrote it; the thread keeps its agent', async () => {
    const first = await createAgent([{ text: 'from the first' }]);
    const second = await createAgent([{ text: 'from the second' }]);
    const name = unique('filed');
    const template = [{ role: 'user' as const, content: 'You are helpful.' }];
    await upsertFileAgent(engine.db, {
      tenantId: DEFAULT_TENANT_ID, name, sourceFile: `/srv/agents/${name}.chatmd`, description: null, instructions: null, model: { provider: 'scripted', script: [] },
      integrationIds: [], maxTurns: 5, template,
    });
    const filed = json(await inject({ method: 'GET', url: `/v1/agents/${name}` }));
    const thread = json(await post('/v1/threads', { agentId: first.id }));
    const own = await runToEnd(thread.id, { input: 'one' });
    const borrowed = await runToEnd(thread.id, { input: 'two', agentId: second.name });
    expect(own).toMatchObject({ agentId: first.id, output: 'from the first' });
    expect(borrowed).toMatchObject({ agentId: second.id, output: 'from the second' });

    const { messages } = json(await inject({ method: 'GET', url: `/v1/threads/${thread.id}/messages` }));
    expect(messages.map((m: Record<string, unknown>) => [m.runId, m.role, m.content, m.agentId, m.agentName])).toEqual([
      [own.id, 'user', 'one', first.id, first.name],
      [own.id, 'assistant', 'from the first', first.id, first.name],
      [borrowed.id, 'user', 'two', second.id, second.name],
      [borrowed.id, 'assistant', 'from the second', second.id, second.name],
    ]);
    expect(json(await inject({ method: 'GET', url: `/v1/threads/${thread.id}` })).agentId).toBe(first.id);
    // With no agent given, a run on the thread is its own agent's, whoever ran the last one.
    expect(await runToEnd(thread.id, { input: 'three' })).toMatchObject({ agentId: first.id, output: 'from the first' });

    // A template written when the thread was made is the thread's agent's.
    const templated = json(await post('/v1/threads', { agentId: filed.id }));
    await seedThreadMessages(engine.db, templated.id, template);
    const seeded = json(await inject({ method: 'GET', url: `/v1/threads/${templated.id}/messages` })).messages;
    expect(seeded).toEqual([expect.objectContaining({ runId: 'template', agentId: filed.id, agentName: name })]);
  });

  test('GET /v1/threads/:id/messages shows roles, tool calls and results, long texts cut with their full size, in pages', async () => {
    const big = 'é'.repeat(3_000); // 2 bytes each in UTF-8
    const agent = await createAgent([
      { toolCalls: [{ name: 'no_such_tool', arguments: { text: big } }] },
      { text: 'done' },
    ]);
    const thread = json(await post('/v1/threads', { agentId: agent.id }));
    const run = await runToEnd(thread.id, { input: `look: ${big}` });
    expect(run.status).toBe('completed');

    const res = await inject({ method: 'GET', url: `/v1/threads/${thread.id}/messages` });
    expect(res.statusCode).toBe(200);
    const { messages, nextAfter } = json(res);
    expect(nextAfter).toBeNull();
    expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const [user, call, result, answer] = messages;
    expect(user).toMatchObject({ seq: 1, runId: run.id, contentBytes: 6 + 6_000, contentTruncated: true });
    expect(user.content).toHaveLength(2_000);
    expect(call.toolCalls).toEqual([{
      id: expect.any(String), name: 'no_such_tool', arguments: expect.stringMatching(/^\{"text": "éé/),
      argumentsBytes: Buffer.byteLength(`{"text": "${big}"}`), argumentsTruncated: true,
    }]);
    expect(call.toolCalls[0].arguments).toHaveLength(2_000);
    expect(result).toMatchObject({
      role: 'tool', toolCallId: call.toolCalls[0].id, toolName: 'no_such_tool', contentTruncated: false,
      content: expect.stringMatching(/^A tool with the name no_such_tool was not found/),
    });
    expect(result.contentBytes).toBe(Buffer.byteLength(result.content));
    expect(answer).toMatchObject({ content: 'done', contentBytes: 4, contentTruncated: false });
    expect(answer).not.toHaveProperty('toolCalls');

    const first = json(await inject({ method: 'GET', url: `/v1/threads/${thread.id}/messages?limit=3` }));
    expect(first.messages).toHaveLength(3);
    const rest = json(await inject({ method: 'GET', url: `/v1/threads/${thread.id}/messages?after=${first.nextAfter}` }));
    expect(rest).toEqual({ messages: [answer], nextAfter: null });
    expectProblem(await inject({ method: 'GET', url: '/v1/threads/thr_nope/messages' }), 404);
    expectProblem(await inject({ method: 'GET', url: `/v1/threads/${thread.id}/messages?after=-1` }), 400);
  });
});
