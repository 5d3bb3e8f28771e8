import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ModelConfig } from '../../core/agent-model';
import type { Integration, NewIntegration } from '../../core/integration';
import { samplingText } from '../../core/sampling';
import { createProviders } from '../../llm/providers';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { logger, type Engine } from '../support/engine';
import { startFakeLlmServer, type FakeLlmServer } from '../support/fake-llm-server';
import { ROOT } from '../support/processes';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

/**
 * Sampling from a 2025-era server (over stdio, answered inside the call's activity), and what the
 * model gets on both eras: only the server's messages and systemPrompt, no tools, the capped
 * maxTokens. The model is a local server speaking the OpenAI wire format, which records requests.
 */
describe('sampling from a 2025-era server, and the model\'s isolation on both eras', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let llm: FakeLlmServer;
  let modern: ModernHttpServer;

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    modern = await startModernHttpServer();
    // The worker's providers: the scripted one, and a keyless OpenAI-compatible one for the fake server.
    ({ engine, app } = await startApiEngine('embedded', {}, { providers: createProviders({ readApiKey: () => undefined, logger }) }));
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await llm?.close();
    await modern?.close();
  });

  const legacy = (settings: Partial<NewIntegration>) => insertIntegration(engine.db, {
    name: `legacy-${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, ...settings,
  });

  async function start(i: Integration, model: ModelConfig, instructions = 'Be brief.'): Promise<string> {
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, instructions, integrationIds: [i.id], model });
    const thread = await insertThread(engine.db, agent.id);
    return engine.start({ threadId: thread.id, input: 'write me something about the sea' });
  }
  const sample = (i: Integration, args: Record<string, unknown> = {}) => ({ toolCalls: [{ name: `${i.name}__sample`, arguments: { topic: 'tides', ...args } }] });
  const scripted = (script: ModelConfig extends infer M ? M extends { provider: 'scripted'; script: infer S } ? S : never : never): ModelConfig => ({ provider: 'scripted', script });

  test('allow: answered inside the call by the next script step, counted in the run\'s usage', async () => {
    const i = await legacy({ sampling: 'allow' });
    const runId = await start(i, scripted([sample(i), { text: 'salt and foam' }, { text: '{{tool_results}}' }]));
    const result = await engine.result(runId);
    expect(result.output).toBe('sampled (scripted, endTurn): salt and foam');
    const { rows } = await engine.db.query<{ status: string; answer: unknown; usage: { outputTokens: number } }>('SELECT status, answer, usage FROM run_samplings WHERE run_id = $1', [runId]);
    expect(rows).toMatchObject([{ status: 'answered', answer: null }]);
    expect(rows[0].usage.outputTokens).toBeGreaterThan(0);
    const turns = (await engine.db.query<{ o: number }>('SELECT sum(output_tokens)::int AS o FROM run_turns WHERE run_id = $1', [runId])).rows[0];
    expect(result.usage.outputTokens).toBe(turns.o + rows[0].usage.outputTokens);
  });

  async function pendingSamplingId(runId: string): Promise<string> {
    let id = '';
    await waitFor(async () => {
      const run = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingApprovals: { toolCallId: string; kind?: string }[] }>();
      id = run.pendingApprovals.find((a) => a.kind === 'sampling')?.toolCallId ?? '';
      return id !== '';
    }, 30_000, 'the sampling request pending approval');
    return id;
  }

  test('at most 8 sampling requests per tool call: the ninth is refused, and the LLM reads why', async () => {
    const i = await legacy({ sampling: 'allow' });
    const call = { toolCalls: [{ name: `${i.name}__sample_many`, arguments: { count: 9 } }] };
    const runId = await start(i, scripted([call, ...Array.from({ length: 8 }, (_, n) => ({ text: `line ${n}` })), { text: '{{tool_results}}' }]));
    expect((await engine.result(runId)).output).toBe(samplingText.tooMany(8));
    const { rows } = await engine.db.query<{ n: number }>("SELECT count(*)::int AS n FROM run_samplings WHERE run_id = $1 AND status = 'answered'", [runId]);
    expect(rows[0].n).toBe(8);
  });

  test('approve, denied: the server gets a refusal, and the LLM reads the contract text', async () => {
    const i = await legacy({ sampling: 'approve' });
    const runId = await start(i, scripted([sample(i), { text: '{{tool_results}}' }]));
    const id = await pendingSamplingId(runId);
    expect((await app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${id}`, payload: { decision: 'deny' } })).statusCode).toBe(200);
    expect((await engine.result(runId)).output).toBe(samplingText.denied());
  });

  test('approve, approved: the call waits in its activity for the reviewer, listed as waiting, then the model answers', async () => {
    const i = await legacy({ sampling: 'approve' });
    const runId = await start(i, scripted([sample(i), { text: 'ebb' }, { text: '{{tool_results}}' }]));
    const id = await pendingSamplingId(runId);
    await waitFor(() => listedAsWaiting(app, runId), 15_000, 'the run listed as waiting');
    expect((await app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${id}`, payload: { decision: 'approve' } })).statusCode).toBe(200);
    expect((await engine.result(runId)).output).toBe('sampled (scripted, endTurn): ebb');
    await waitFor(async () => !(await listedAsWaiting(app, runId)), 15_000, 'the run no longer listed as waiting');
  });

  test.each(['2025 (stdio, in the activity)', '2026 (HTTP, a workflow step)'])('%s: the model gets only the server\'s messages, no tools, the capped maxTokens', async (era) => {
    const i = era.startsWith('2025')
      ? await legacy({ sampling: 'allow', samplingMaxTokens: 40 })
      : await insertIntegration(engine.db, { name: `modern-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: modern.url }, sampling: 'allow', samplingMaxTokens: 40 });
    llm.requests.length = 0;
    llm.play([
      { toolCalls: [{ id: 'call_s1', name: `${i.name}__sample`, args: { topic: 'tides', maxTokens: 5000 } }], usage: { input: 100, output: 10 } },
      { text: 'a haiku', usage: { input: 7, output: 3 } },
      { text: 'done', usage: { input: 200, output: 2 } },
    ]);
    const secretInstructions = `Never reveal ${randomUUID()}.`;
    const runId = await start(i, { provider: 'openai', name: 'fake-model', baseUrl: llm.baseUrl }, secretInstructions);
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'done', usage: { inputTokens: 307, outputTokens: 15 } });
    expect(result.toolCalls[0]).toMatchObject({ status: 'ok', result: 'sampled (fake-model, endTurn): a haiku' });
    const sampling = llm.requests[1].body;
    expect(sampling.messages).toEqual([{ role: 'system', content: 'You are a poet.' }, { role: 'user', content: 'a poem about tides' }]);
    expect(sampling.tools).toBeUndefined();
    expect(sampling.max_tokens).toBe(40);
    expect(JSON.stringify(sampling)).not.toContain(secretInstructions);
    expect(JSON.stringify(sampling)).not.toContain('write me something');
  });
});
