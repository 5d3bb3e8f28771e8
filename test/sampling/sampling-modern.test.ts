import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Integration, NewIntegration } from '../../core/integration';
import { samplingText } from '../../core/sampling';
import { toolResultText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { listedAsWaiting } from '../support/waiting-list';

interface PendingApproval { toolCallId: string; kind?: string; forToolCallId?: string; name: string; arguments: { messages: { role: string; text: string }[]; systemPrompt?: string; maxTokens: number } }
type Step = { toolCalls: { name: string; arguments: Record<string, unknown> }[]; text?: string } | { text: string; delayMs?: number };

/**
 * A 2026-era server's sampling requests (sampling/createMessage inside input_required), answered by
 * the run's model as a step of the workflow, with `allow` at once, with `approve` after a reviewer.
 * Real Temporal, a real v2 MCP server over HTTP; the LLM is the scripted provider, whose step
 * cursor gives each turn and each sampling answer the next step.
 */
describe('a 2026-era server samples the run\'s model', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let http: ModernHttpServer;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    http = await startModernHttpServer();
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await http?.close();
  });

  const integration = (settings: Partial<NewIntegration>) => insertIntegration(engine.db, {
    name: `sampling-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: http.url }, ...settings,
  });

  async function start(i: Integration, script: Step[]): Promise<string> {
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, integrationIds: [i.id], model: { provider: 'scripted', script } });
    const thread = await insertThread(engine.db, agent.id);
    return engine.start({ threadId: thread.id, input: 'go' });
  }
  const sample = (i: Integration, args: Record<string, unknown> = {}): Step => ({ toolCalls: [{ name: `${i.name}__sample`, arguments: { topic: 'tides', ...args } }] });

  const stored = async (runId: string) => (await engine.db.query<{ status: string; answer: unknown; usage: { inputTokens: number; outputTokens: number } | null }>(
    'SELECT status, answer, usage FROM run_samplings WHERE run_id = $1', [runId])).rows;
  const turnUsage = async (runId: string) => (await engine.db.query<{ i: number; o: number }>(
    'SELECT sum(input_tokens)::int AS i, sum(output_tokens)::int AS o FROM run_turns WHERE run_id = $1', [runId])).rows[0];

  test('allow: the next script step answers, the call goes on with it, its usage is the run\'s, its answer is not kept', async () => {
    const i = await integration({ sampling: 'allow' });
    const runId = await start(i, [sample(i), { toolCalls: [{ name: 'ignored_tool', arguments: {} }], text: 'the sea breathes' }, { text: '{{tool_results}}', delayMs: 1_500 }]);
    // While the last turn thinks, the run's live usage has the first turn's and the sampling answer's.
    await waitFor(async () => {
      const [answered] = await stored(runId);
      if (answered?.status !== 'answered') return false;
      const live = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ status: string; usage: { inputTokens: number; outputTokens: number } }>();
      const turns = await turnUsage(runId);
      return live.status === 'running' && live.usage.outputTokens === turns.o + answered.usage!.outputTokens && live.usage.inputTokens === turns.i + answered.usage!.inputTokens;
    }, 10_000, 'the live usage with the sampling answer\'s');
    const result = await engine.result(runId);
    // The sampling step's tool call was not executed: the run had two turns and one tool call.
    expect(result).toMatchObject({ status: 'completed', output: 'sampled (scripted, endTurn): the sea breathes', turns: 2 });
    expect(result.toolCalls).toHaveLength(1);
    const [row] = await stored(runId);
    expect(row).toMatchObject({ status: 'answered', answer: null });
    expect(row.usage!.outputTokens).toBeGreaterThan(0);
    const turns = await turnUsage(runId);
    expect(result.usage).toEqual({ inputTokens: turns.i + row.usage!.inputTokens, outputTokens: turns.o + row.usage!.outputTokens });
    // The sampling step ran as an activity of its own.
    const history = JSON.stringify((await engine.client.workflow.getHandle(runId).fetchHistory()).events);
    expect(history).toContain('sampleMessage');
    expect(history).not.toContain('the sea breathes');
  });

  test('the request\'s maxTokens is capped by samplingMaxTokens, and the answer says it stopped there', async () => {
    const i = await integration({ sampling: 'allow', samplingMaxTokens: 2 });
    const runId = await start(i, [sample(i, { maxTokens: 500 }), { text: 'x'.repeat(100) }, { text: '{{tool_results}}' }]);
    expect((await engine.result(runId)).output).toBe(`sampled (scripted, maxTokens): ${'x'.repeat(8)}`);
  });

  test('never (the default): the capability is not declared, so the server cannot ask, and nothing is sampled', async () => {
    const i = await integration({});
    const runId = await start(i, [sample(i), { text: '{{tool_results}}' }]);
    const { output } = await engine.result(runId);
    // The v2 server checks the request's client capabilities before it asks.
    expect(output).toContain(toolResultText.mcpToolFailed(''));
    expect(output).toContain('capabilit');
    expect(await stored(runId)).toEqual([]);
  });

  async function pendingSampling(runId: string): Promise<PendingApproval> {
    let found: PendingApproval | undefined;
    await waitFor(async () => {
      const run = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingApprovals: PendingApproval[] }>();
      found = run.pendingApprovals.find((a) => a.kind === 'sampling');
      return Boolean(found);
    }, 30_000, 'a sampling request pending approval');
    return found!;
  }
  const decide = (runId: string, id: string, decision: 'approve' | 'deny', reason?: string) =>
    app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${id}`, payload: { decision, ...(reason ? { reason } : {}) } });

  test('approve: the reviewer sees what the model would get, no activity runs meanwhile, and the approval lets it answer', async () => {
    const i = await integration({ sampling: 'approve' });
    const runId = await start(i, [sample(i), { text: 'waves' }, { text: '{{tool_results}}' }]);
    const stream = app.inject({ method: 'GET', url: `/v1/runs/${runId}/events` }).then((r) => r.body);
    const pending = await pendingSampling(runId);
    expect(pending.toolCallId).toMatch(/^samp_[0-9a-f]{32}$/);
    expect(pending.forToolCallId).toBe('call_1_1');
    expect(pending.arguments).toEqual({ messages: [{ role: 'user', text: 'a poem about tides' }], systemPrompt: 'You are a poet.', maxTokens: 10 });
    const described = await engine.client.workflow.getHandle(runId).describe();
    expect(described.raw.pendingActivities ?? []).toEqual([]);
    await waitFor(() => listedAsWaiting(app, runId), 15_000, 'the run listed as waiting');

    const approved = await decide(runId, pending.toolCallId, 'approve');
    expect(approved.statusCode).toBe(200);
    const again = await decide(runId, pending.toolCallId, 'deny');
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'already_decided', approvalStatus: 'approved' });
    expect((await engine.result(runId)).output).toBe('sampled (scripted, endTurn): waves');
    const events = await stream;
    expect(events).toContain('event: sampling_requested');
    expect(events).toMatch(/event: sampling_resolved\ndata: \{[^\n]*"status":"answered"/);
    expect(events).toMatch(/event: sampling_requested\ndata: \{[^\n]*"needsApproval":true/);
  });

  test('approve, denied: the LLM reads the contract text, the model is not asked, and the next step is still the next turn\'s', async () => {
    const i = await integration({ sampling: 'approve' });
    const runId = await start(i, [sample(i), { text: 'denied: {{tool_results}}' }]);
    const pending = await pendingSampling(runId);
    expect((await decide(runId, pending.toolCallId, 'deny', 'not today')).statusCode).toBe(200);
    const result = await engine.result(runId);
    expect(result.output).toBe(`denied: ${samplingText.denied()}`);
    expect(await stored(runId)).toMatchObject([{ status: 'denied', usage: null }]);
  });

  test('approve, not decided in time: the call ends with the timeout text', async () => {
    const i = await integration({ sampling: 'approve', elicitationTimeoutMs: 2_000 });
    const runId = await start(i, [sample(i), { text: '{{tool_results}}' }]);
    expect((await engine.result(runId)).output).toBe(toolResultText.mcpQuestionNotAnswered('2s'));
    expect(await stored(runId)).toMatchObject([{ status: 'timed_out' }]);
  });
});
