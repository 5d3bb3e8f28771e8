import { randomUUID } from 'node:crypto';
import type { EvalView } from '../../core/eval-view';
import type { RunView } from '../../core/run-view';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertThread } from '../../store/threads/threads';
import { withCliEngine } from '../support/cli';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { waitFor } from '../support/wait';

/*
 * An eval replays runs with a changed agent and scores each replay: five runs of an agent that
 * echoes, replayed by its new version, which no longer calls the tool. The eval names the run whose
 * expectation failed, the tool its replay no longer called and the expectation; `agent-engine eval`
 * exits 0 when every replay passes and 1 when one fails. A thread's runs replay in order on one new thread.
 */

const WAIT_MS = 120_000;

describe('an eval of five runs whose agent stops calling a tool', () => {
  const h = withCliEngine({ app: { rateLimitPerMinute: 0 } });
  let echo: string;
  let agents: { v1: string; v2: string };
  let runIds: string[];

  const agentWith = async (script: ScriptStep[], integrationIds: string[]) =>
    (await insertAgent(h.engine.db, { name: `eval-${randomUUID().slice(0, 8)}`, integrationIds, model: { provider: 'scripted', script } })).id;
  const readEval = async (id: string) => (await h.app.inject({ method: 'GET', url: `/v1/evals/${id}` })).json<EvalView>();
  const readRun = async (id: string) => (await h.app.inject({ method: 'GET', url: `/v1/runs/${id}` })).json<RunView>();
  const untilEnded = async (id: string) => {
    await waitFor(async () => (await readEval(id)).status !== 'running', WAIT_MS, `eval ${id} to end`);
    return readEval(id);
  };

  beforeAll(async () => {
    const fx = await insertFixtureIntegration(h.engine.db);
    echo = `${fx.name}__echo`;
    agents = {
      v1: await agentWith([{ toolCalls: [{ name: echo, arguments: { text: 'hi' } }] }, { text: 'said: {{tool_results}}' }], [fx.id]),
      v2: await agentWith([{ text: 'nothing to say' }], [fx.id]),
    };
    runIds = await Promise.all(Array.from({ length: 5 }, async (_, i) => {
      const thread = await insertThread(h.engine.db, agents.v1);
      const runId = await h.engine.start({ threadId: thread.id, input: `say hi ${i}` });
      expect(await h.engine.result(runId)).toMatchObject({ status: 'completed', output: 'said: echo: hi' });
      return runId;
    }));
  }, WAIT_MS);

  test('replayed by the same agent, every replay passes: the CLI exits 0', async () => {
    const cli = h.cli(['eval', 'same', '--runs', runIds.join(','), '--agent', agents.v1, '--tools', 'recorded',
      '--expect', JSON.stringify({ toolsCalled: [echo], outputContains: 'echo: hi', maxTurns: 2 })]);
    const ended = await cli.ended;
    expect({ code: ended.code, stderr: ended.stderr }).toMatchObject({ code: 0 });
    expect(ended.stdout).toContain('5 run(s): 5 passed, 0 failed');
    expect(ended.stdout.split('\n').filter((l) => l.endsWith('  pass'))).toHaveLength(5);
  }, WAIT_MS);

  test('replayed by the new version, the run expected to call the tool fails, named with the tool removed; the CLI exits 1', async () => {
    const named = runIds[2];
    const cli = h.cli(['eval', 'changed', '--runs', runIds.join(','), '--agent', agents.v2,
      '--expect', JSON.stringify({ stopReason: 'answer' }), '--expect-by-run', JSON.stringify({ [named]: { toolsCalled: [echo] } })]);
    const ended = await cli.ended;
    expect(ended.code).toBe(1);
    expect(ended.stdout).toContain('5 run(s): 4 passed, 1 failed');
    expect(ended.stdout.split('\n').find((l) => l.startsWith(named))).toMatch(new RegExp(`FAIL toolsCalled: ${echo}$`));
    expect(ended.stdout).toContain(`removed ${echo} {"text": "hi"}`);

    const evalId = /eval (evl_\w+) started/.exec(ended.stderr)?.[1] ?? '';
    const view = await readEval(evalId);
    expect(view).toMatchObject({ status: 'completed', tools: 'recorded', agentId: agents.v2, totals: { runs: 5, scored: 5, passed: 4, failed: 1 } });
    expect(view.runs.map((r) => r.runId)).toEqual(runIds);
    const failed = view.runs.find((r) => r.runId === named)!;
    expect(failed).toMatchObject({
      status: 'completed', passed: false, failed: [`toolsCalled: ${echo}`],
      output: { original: 'said: echo: hi', replay: 'nothing to say' },
      toolCalls: { added: [], removed: [{ name: echo, arguments: '{"text": "hi"}' }], changed: [] },
      turns: { original: 2, replay: 1 },
    });
    for (const r of view.runs.filter((x) => x.runId !== named)) expect(r).toMatchObject({ passed: true, failed: [] });
    // Each replay is a run of its own: not a sub-agent's, the eval's.
    const replay = await readRun(failed.replayRunId!);
    expect(replay).toMatchObject({ parentRunId: null, evalId, replayOf: { runId: named, tools: 'recorded' }, agentId: agents.v2 });
    const listed = (await h.app.inject({ method: 'GET', url: '/v1/evals?limit=100' })).json<{ evals: { id: string }[] }>();
    expect(listed.evals.map((e) => e.id)).toContain(evalId);
  }, WAIT_MS);

  test('a cancelled eval cancels the replays running and ends cancelled', async () => {
    const slow = await agentWith([{ text: 'slowly', delayMs: 60_000 }], []);
    const started = await h.app.inject({
      method: 'POST', url: '/v1/evals', payload: { name: 'cancel', runIds: runIds.slice(0, 2), agentId: slow, tools: 'recorded' },
    });
    const evalId: string = started.json().id;
    await waitFor(async () => (await readEval(evalId)).runs.every((r) => r.status === 'running'), WAIT_MS, 'the replays to run');
    const cancelled = await h.app.inject({ method: 'POST', url: `/v1/evals/${evalId}/cancel` });
    expect(cancelled.statusCode).toBe(202);
    const view = await untilEnded(evalId);
    expect(view).toMatchObject({ status: 'cancelled', totals: { scored: 0 } });
    for (const r of view.runs) {
      await waitFor(async () => (await readRun(r.replayRunId!)).status !== 'running', WAIT_MS, 'the replay to end');
      expect(await readRun(r.replayRunId!)).toMatchObject({ status: 'cancelled', evalId });
    }
  }, WAIT_MS);

  test('a thread\'s runs replay in their order on one new thread', async () => {
    const thread = await insertThread(h.engine.db, agents.v1);
    const first = await h.engine.start({ threadId: thread.id, input: 'first' });
    await h.engine.result(first);
    const second = await h.engine.start({ threadId: thread.id, input: 'second' });
    await h.engine.result(second);
    const started = await h.app.inject({
      method: 'POST', url: '/v1/evals', payload: { name: 'thread', threadIds: [thread.id], tools: 'recorded', expect: { toolsCalled: [echo] } },
    });
    expect(started.statusCode).toBe(202);
    const view = await untilEnded(started.json().id);
    expect(view).toMatchObject({ status: 'completed', totals: { runs: 2, passed: 2 } });
    expect(view.runs.map((r) => r.runId)).toEqual([first, second]);
    const [one, two] = await Promise.all(view.runs.map((r) => readRun(r.replayRunId!)));
    expect(two.threadId).toBe(one.threadId);
    expect(one.threadId).not.toBe(thread.id);
    expect(Date.parse(two.createdAt)).toBeGreaterThanOrEqual(Date.parse(one.endedAt!));
  }, WAIT_MS);
});
