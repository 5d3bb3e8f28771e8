import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ScriptStep } from '../../core/agent-model';
import type { RunView } from '../../core/run-view';
import { subAgentToolName } from '../../core/sub-agents';
import { toolResultText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { insertThread, threadMessages } from '../../store/threads/threads';
import { insertIntegration } from '../../store/integrations/integrations';
import { listEvents } from '../../store/runs/events';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { testStack } from '../support/stack-env';
import { followSseText, sseEventsOf } from '../support/sse-text';
import { waitFor } from '../support/wait';
import { withCliEngine } from '../support/cli';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

/** Sub-agents: an agent's runs call other agents as tools `agent__<name>`, each call a child run workflow on a new thread. */
describe('sub-agents', () => {
  const h = withCliEngine({ app: { rateLimitPerMinute: 0 } });

  const named = (prefix: string) => `${prefix}_${randomUUID().slice(0, 8)}`;
  const agent = (script: ScriptStep[], extra: { subAgentIds?: string[]; integrationIds?: string[]; description?: string; instructions?: string; limits?: { maxToolCalls: number } } = {}, name = named('a')) =>
    insertAgent(h.engine.db, { name, model: { provider: 'scripted', script }, ...extra });
  const read = async (runId: string) => (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}?waitMs=30000` })).json<RunView>();
  async function run(agentId: string, input = 'go') {
    const thread = await insertThread(h.engine.db, agentId);
    const runId = await h.engine.start({ threadId: thread.id, input });
    await h.engine.result(runId);
    return read(runId);
  }

  test('a sub-agent answers: its output is the tool result, and its run knows its parent', async () => {
    const child = await agent([{ text: 'the child says hello' }], { description: 'Greets' });
    const parent = await agent([
      { toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'say hello' } }] },
      { text: 'parent heard: {{tool_results}}' },
    ], { subAgentIds: [child.id], instructions: 'Ask the child agent and report what it says, word for word.' });
    const parentRun = await run(parent.id);
    expect(parentRun).toMatchObject({ status: 'completed', output: 'parent heard: the child says hello', parentRunId: null });
    const call = parentRun.toolCalls[0];
    expect(call).toMatchObject({ type: 'sub_agent', status: 'ok', childRunId: expect.stringMatching(/^run_/) });

    const childRun = await read(call.childRunId!);
    expect(childRun).toMatchObject({ status: 'completed', agentId: child.id, parentRunId: parentRun.id, parentToolCallId: call.id, output: 'the child says hello' });
    expect(childRun.threadId).not.toBe(parentRun.threadId);
    expect((await threadMessages(h.engine.db, childRun.threadId))[0]).toMatchObject({ role: 'user', content: 'say hello' });
    expect(parentRun.usageWithChildren.inputTokens).toBe(parentRun.usage.inputTokens + childRun.usage.inputTokens);
    // The prefix's tokens, as run_started counted them (a scripted model: an estimate).
    const started = (await listEvents(h.engine.db, parentRun.id))[0].data.prefix as { tokens: number; tokensEstimated: boolean };
    expect(parentRun.prefix).toEqual({ tokens: started.tokens, tokensEstimated: true });
    expect(started.tokens).toBeGreaterThan(5);

    await waitFor(async () => (await h.app.inject({ method: 'GET', url: `/v1/runs?parentRunId=${parentRun.id}` }))
      .json<{ runs: { id: string }[] }>().runs.some((r) => r.id === childRun.id), 20_000, 'the child listed under its parent');
  });

  test('a failed sub-agent and a call without input are error texts for the parent\'s LLM', async () => {
    // No key for this model on the worker: the child run fails at once.
    const broken = await insertAgent(h.engine.db, { name: named('broken'), model: { provider: 'anthropic', name: 'claude-test', apiKeyEnv: 'ENGINE_TEST_MISSING_KEY' } });
    const tool = subAgentToolName(broken.name);
    const parent = await agent([
      { toolCalls: [{ name: tool, arguments: { input: 'work' } }, { name: tool, arguments: { text: 'no input' } }] },
      { text: '{{tool_results}}' },
    ], { subAgentIds: [broken.id] });
    const parentRun = await run(parent.id);
    expect(parentRun.status).toBe('completed');
    expect(parentRun.toolCalls.map((c) => c.status)).toEqual(['error', 'error']);
    expect(parentRun.toolCalls[0].result).toMatch(new RegExp(`^Sub-agent ${broken.name} failed: `));
    expect(parentRun.toolCalls[1].result).toBe(`Sub-agent call ${tool} needs {"input": "<text>"} (a non-empty string).`);
    expect((await read(parentRun.toolCalls[0].childRunId!)).status).toBe('failed');
  });

  test('cancelling the parent cancels its children', async () => {
    const slow = await agent([{ text: 'too late', delayMs: 60_000 }]);
    const parent = await agent([{ toolCalls: [{ name: subAgentToolName(slow.name), arguments: { input: 'take your time' } }] }, { text: 'never' }], { subAgentIds: [slow.id] });
    const thread = await insertThread(h.engine.db, parent.id);
    const runId = await h.engine.start({ threadId: thread.id, input: 'go' });
    let childRunId = '';
    await waitFor(async () => {
      const rows = await h.engine.db.query<{ id: string }>('SELECT id FROM runs WHERE parent_run_id = $1', [runId]);
      childRunId = rows.rows[0]?.id ?? '';
      return Boolean(childRunId) && (await h.engine.db.query('SELECT 1 FROM run_turns WHERE run_id = $1', [childRunId])).rowCount! > 0;
    }, 30_000, 'the child running its turn');
    expect((await h.app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` })).statusCode).toBe(202);
    expect((await read(runId)).status).toBe('cancelled');
    await waitFor(async () => (await read(childRunId)).status === 'cancelled', 30_000, 'the child cancelled');
  });

  test('a child starts with what is left of its parent\'s budget', async () => {
    const child = await agent([{ toolCalls: [{ name: 'x', arguments: {} }, { name: 'y', arguments: {} }] }, { text: 'never' }]);
    const parent = await agent([{ toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'go' } }] }, { text: '{{tool_results}}' }],
      { subAgentIds: [child.id], limits: { maxToolCalls: 2 } });
    const parentRun = await run(parent.id);
    // The parent's call is one of its 2: the child may make 1 of its 2.
    const childRun = await read(parentRun.toolCalls[0].childRunId!);
    expect(childRun).toMatchObject({ stopReason: 'budget', limitReached: 'maxToolCalls' });
    expect(parentRun.output).toMatch(new RegExp(`^Sub-agent ${child.name} stopped \\(budget\\)`));
  });

  test('a child\'s approval shows on its parent\'s run object; the parent\'s events tell the child\'s start and end', async () => {
    const fx = await insertIntegration(h.engine.db, {
      name: named('fx'), approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const child = await insertAgent(h.engine.db, {
      name: named('asker'), integrationIds: [fx.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: 'child: {{tool_results}}' }] },
    });
    const parent = await agent([{ toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'ask' } }] }, { text: '{{tool_results}}' }], { subAgentIds: [child.id] });
    const thread = await insertThread(h.engine.db, parent.id);
    const runId = await h.engine.start({ threadId: thread.id, input: 'go' });
    const sse = followSseText(`${h.url}/v1/runs/${runId}/events`);
    let waiting: RunView['pendingApprovals'] = [];
    await waitFor(async () => (waiting = (await h.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunView>().pendingApprovals).length > 0,
      60_000, 'the child\'s approval on the parent');
    const childRunId = waiting[0].runId!;
    expect(childRunId).toMatch(/^run_/);
    expect(waiting[0]).toMatchObject({ toolCallId: 'call_1_1', name: `${fx.name}__echo` });
    // The parent's stream shows the child's approval too (no id: it is not one of the parent's numbered events).
    await sse.seen(`"runId":"${childRunId}"`);
    const decided = await h.app.inject({ method: 'POST', url: `/v1/runs/${childRunId}/approvals/call_1_1`, payload: { decision: 'approve' } });
    expect(decided.statusCode).toBe(200);
    const done = await read(runId);
    expect(done).toMatchObject({ status: 'completed', pendingApprovals: [] });
    expect(done.output).toMatch(/^child: /);
    const events = (await listEvents(h.engine.db, runId)).map((e) => [e.type, e.data.childRunId ?? null]);
    const streamed = await sse.text();
    expect(sseEventsOf<{ runId: string; toolCallId: string }>(streamed, 'approval_requested').map((a) => [a.runId, a.toolCallId])).toEqual([[childRunId, 'call_1_1']]);
    expect(sseEventsOf<{ runId: string }>(streamed, 'approval_resolved').map((a) => a.runId)).toEqual([childRunId]);
    expect(sseEventsOf<{ childRunId: string }>(streamed, 'child_run_started').map((e) => e.childRunId)).toEqual([childRunId]);
    expect(events.filter(([type]) => String(type).startsWith('child_run') || String(type).startsWith('tool_call'))).toEqual([
      ['tool_call_started', null], ['child_run_started', childRunId], ['child_run_ended', childRunId], ['tool_call_ended', null],
    ]);
  });

  test('a tool call\'s events say their own type, and the call\'s kind as toolType: on the event stream and in the CLI\'s --follow', async () => {
    const fx = await insertIntegration(h.engine.db, {
      name: named('fx'), transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const child = await agent([{ text: 'the child answers' }]);
    const parent = await agent([
      { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }, { name: subAgentToolName(child.name), arguments: { input: 'go on' } }] },
      { text: '{{tool_results}}' },
    ], { subAgentIds: [child.id], integrationIds: [fx.id] });
    const cli = h.cli(['run', '--agent', parent.name, 'go', '--follow']);
    expect(await cli.done).toBe(0);
    const runId = /^run (run_\w+) on thread/m.exec(cli.out.screen)?.[1];
    expect(runId).toBeDefined();
    const streamed = await followSseText(`${h.url}/v1/runs/${runId}/events`).text();
    for (const type of ['tool_call_started', 'tool_call_ended']) {
      const calls = sseEventsOf<{ type: string; toolType: string; name: string }>(streamed, type);
      expect(calls.map((c) => [c.type, c.name, c.toolType]).sort()).toEqual([
        [type, `${fx.name}__echo`, 'mcp_tool'], [type, subAgentToolName(child.name), 'sub_agent'],
      ].sort());
    }
    // The CLI shows the kind of a call that is not an integration's tool (which shows its integration).
    expect(cli.out.screen).toContain(`→ ${subAgentToolName(child.name)} (sub_agent)`);
    expect(cli.out.screen).toContain(`→ ${fx.name}__echo [${fx.name}]`);
  });

  test('the CLI finds a run\'s children: runs list --parent, and runs show names each sub-agent call\'s child run and a child\'s parent', async () => {
    const child = await agent([{ text: 'the child answers' }]);
    const parent = await agent([
      { toolCalls: [{ name: subAgentToolName(child.name), arguments: { input: 'one' } }, { name: subAgentToolName(child.name), arguments: { input: 'two' } }] },
      { text: '{{tool_results}}' },
    ], { subAgentIds: [child.id] });
    const parentRun = await run(parent.id);
    const childIds = parentRun.toolCalls.map((c) => c.childRunId!);
    expect(childIds).toEqual([expect.stringMatching(/^run_/), expect.stringMatching(/^run_/)]);
    const cli = async (...args: string[]) => {
      const c = h.cli(args);
      return { code: await c.done, screen: c.out.screen };
    };

    let listed = { code: -1 as number | null, screen: '' };
    await waitFor(async () => {
      listed = await cli('runs', 'list', '--parent', parentRun.id);
      return childIds.every((id) => listed.screen.includes(id));
    }, 30_000, 'both children listed under their parent');
    expect(listed.code).toBe(0);
    expect(listed.screen).not.toContain(parentRun.id);
    const asJson = JSON.parse((await cli('runs', 'list', '--parent', parentRun.id, '--json')).screen) as { runs: { id: string }[] };
    expect(asJson.runs.map((r) => r.id).sort()).toEqual([...childIds].sort());
    expect(await cli('runs', 'list', '--parent', `run_${randomUUID().replace(/-/g, '')}`)).toEqual({ code: 0, screen: 'no runs\n' });
    const bad = await cli('runs', 'list', '--parent', 'not a run');
    expect(bad.code).toBe(3);
    expect(bad.screen).toMatch(/parentRunId/);

    const shown = (await cli('runs', 'show', parentRun.id)).screen;
    for (const call of parentRun.toolCalls) {
      expect(shown).toMatch(new RegExp(`turn 1  ${subAgentToolName(child.name)} .*\n(?:    .*\n)*?    child run: ${call.childRunId}\n`));
    }
    const childShown = (await cli('runs', 'show', childIds[0])).screen;
    expect(childShown).toContain(`parent:   ${parentRun.id} (tool call ${parentRun.toolCalls[0].id})`);
    expect(shown).not.toContain('parent:');
  });

  test('a run\'s limits bound its children: at once (the others wait) and in all (the others are refused)', async () => {
    const slow = await agent([{ text: 'done slowly', delayMs: 600 }]);
    const tool = subAgentToolName(slow.name);
    const twice = [{ toolCalls: [{ name: tool, arguments: { input: 'one' } }, { name: tool, arguments: { input: 'two' } }] }, { text: '{{tool_results}}' }];
    const parent = await agent(twice, { subAgentIds: [slow.id] });
    const thread = await insertThread(h.engine.db, parent.id);
    const oneAtATime = await h.engine.start({ threadId: thread.id, input: 'go', limits: { maxChildrenAtOnce: 1 } });
    await h.engine.result(oneAtATime);
    const ends = await Promise.all((await read(oneAtATime)).toolCalls.map(async (c) => Date.parse((await read(c.childRunId!)).endedAt!)));
    expect(Math.abs(ends[0] - ends[1])).toBeGreaterThanOrEqual(500);

    const thread2 = await insertThread(h.engine.db, parent.id);
    const capped = await h.engine.start({ threadId: thread2.id, input: 'go', limits: { maxDescendants: 1 } });
    await h.engine.result(capped);
    const calls = (await read(capped)).toolCalls;
    expect(calls.map((c) => c.status).sort()).toEqual(['error', 'ok']);
    expect(calls.find((c) => c.status === 'error')?.result).toBe('Sub-agent not started: the run and its sub-agents may start at most 1 runs below the first.');
  });

  test('depth is bounded: a run three levels down is offered no sub-agents', async () => {
    const leaf = await agent([{ text: 'leaf' }]);
    let below = leaf;
    const chain = [];
    for (let level = 0; level < 4; level++) {
      below = await agent([{ toolCalls: [{ name: subAgentToolName(below.name), arguments: { input: 'down' } }] }, { text: `L${level}[{{tool_results}}]` }], { subAgentIds: [below.id] });
      chain.push(below);
    }
    // The top run is at depth 0; its great-grandchild (depth 3) cannot call the leaf.
    const top = await run(chain[3].id);
    expect(top.output).toBe(`L3[L2[L1[L0[${toolResultText.unknownTool(subAgentToolName(leaf.name))}]]]]`);
  });

  test('the API resolves sub-agents by name, refuses cycles, deleting a listed agent, and the integration name "agent"', async () => {
    const model = { provider: 'scripted', script: [{ text: 'hi' }] };
    const post = (payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: '/v1/agents', payload: { model, ...payload } });
    const b = (await post({ name: named('b') })).json<{ id: string; name: string }>();
    const a = await post({ name: named('a'), subAgents: [b.name] });
    expect(a.statusCode).toBe(201);
    expect(a.json()).toMatchObject({ subAgents: [b.id] });
    expect((await post({ name: named('c'), subAgents: ['no-such-agent'] })).statusCode).toBe(400);

    const cycle = await h.app.inject({ method: 'PATCH', url: `/v1/agents/${b.id}`, payload: { subAgents: [a.json<{ id: string }>().id] } });
    expect(cycle.statusCode).toBe(409);
    expect(cycle.json()).toMatchObject({ code: 'sub_agent_cycle' });
    expect((await h.app.inject({ method: 'PATCH', url: `/v1/agents/${b.id}`, payload: { subAgents: [b.id] } })).statusCode).toBe(409);

    const deleted = await h.app.inject({ method: 'DELETE', url: `/v1/agents/${b.id}` });
    expect(deleted.statusCode).toBe(409);
    expect(deleted.json().detail).toContain(a.json<{ name: string }>().name);

    const reserved = await h.app.inject({ method: 'POST', url: '/v1/integrations', payload: { name: 'agent', transport: { type: 'http', url: 'https://example.com/mcp' } } });
    expect(reserved.statusCode).toBe(409);
  });

  test('agent files list sub-agents by name: resolved at sync, in any file order; a cycle and a name taken over are reported', async () => {
    const dir = path.join(testStack().tmpDir, `sub-agent-files-${randomUUID().slice(0, 8)}`);
    await mkdir(dir, { recursive: true });
    const file = (subAgents: string[]) => `<config>\n${JSON.stringify({ model: { provider: 'scripted', script: [{ text: 'hi' }] }, subAgents })}\n</config>\n`;
    const [first, second, api] = ['a', 'b', 'c'].map((p) => named(`f${p}`));
    const helper = await agent([{ text: 'helping' }], {}, api);
    try {
      // "first" names "second", which a later file defines.
      await writeFile(path.join(dir, `${first}.chatmd`), file([second, helper.name]));
      await writeFile(path.join(dir, `${second}.chatmd`), file([]));
      const report = await syncAgentFiles(h.engine.db, dir);
      expect(report.errors).toEqual([]);
      const secondId = (await h.app.inject({ method: 'GET', url: `/v1/agents/${second}` })).json<{ id: string }>().id;
      expect((await h.app.inject({ method: 'GET', url: `/v1/agents/${first}` })).json()).toMatchObject({ subAgents: [secondId, helper.id] });

      await writeFile(path.join(dir, `${second}.chatmd`), file([first]));
      const cycle = await syncAgentFiles(h.engine.db, dir);
      expect(cycle.errors.map((e) => e.message)).toEqual([`${path.join(dir, `${second}.chatmd`)}:1: subAgents: the agent would reach itself through its sub-agents (a cycle)`]);

      // The helper is renamed and another agent takes its name: "first" keeps the helper it named.
      await writeFile(path.join(dir, `${second}.chatmd`), file([]));
      await h.app.inject({ method: 'PATCH', url: `/v1/agents/${helper.id}`, payload: { name: named('renamed') } });
      await agent([{ text: 'impostor' }], {}, api);
      const taken = await syncAgentFiles(h.engine.db, dir);
      expect(taken.errors.map((e) => e.message)).toEqual([expect.stringContaining(`subAgents: "${api}" now names another agent; keeping`)]);
      expect((await h.app.inject({ method: 'GET', url: `/v1/agents/${first}` })).json()).toMatchObject({ subAgents: [secondId, helper.id] });
    } finally {
      await rm(dir, { recursive: true, force: true });
      await syncAgentFiles(h.engine.db, dir).catch(() => undefined);
    }
  });
});
