import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import Fastify from 'fastify';
import { problemHandlers } from '../../api/problem';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { withCliEngine } from '../support/cli';
import { freePort } from '../../platform/ports';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const suffix = () => randomUUID().slice(0, 8);

describe('the agent-engine CLI against a running API', () => {
  const h = withCliEngine();
  let fixture: Integration;
  /** The CLI as a user runs it: a child process, stdin a pipe (not a terminal), talking HTTP to the API. */
  const cli = (args: string[], apiUrl = h.url) => h.cli(args, { apiUrl });
  const run = (args: string[], apiUrl = h.url) => cli(args, apiUrl).ended;

  beforeAll(async () => {
    fixture = await insertIntegration(h.engine.db, {
      name: `fx_${suffix()}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
  });

  async function createAgent(script: unknown[], integrationIds: string[] = []): Promise<{ id: string; name: string }> {
    const res = await fetch(`${h.url}/v1/agents`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `cli_${suffix()}`, model: { provider: 'scripted', script }, integrationIds }),
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; name: string };
  }

  test('run --follow shows turns and tool calls live, then prints the answer; runs list/show and agents list read it back', async () => {
    const echo = `${fixture.name}__echo`;
    const agent = await createAgent([
      { toolCalls: [{ name: echo, arguments: { text: 'hi' } }, { name: 'nope', arguments: {} }] },
      { text: 'The answer: {{tool_results}}' },
    ], [fixture.id]);

    const followed = await run(['run', '--agent', agent.name, 'hello', '--follow']);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/^The answer: echo: hi\nA tool with the name nope was not found/);
    const runId = /^run (run_\w+) on thread (thr_\w+) \(agent /m.exec(followed.stderr)?.[1];
    const threadId = /^run run_\w+ on thread (thr_\w+)/m.exec(followed.stderr)?.[1];
    expect(runId).toBeDefined();
    const progress = [
      `run started · agent ${agent.name}`, 'turn 1', `→ ${echo} [${fixture.name}]`, 'turn 2', 'run completed (answer)',
    ].map((line) => followed.stderr.indexOf(line));
    expect(progress.every((at) => at >= 0)).toBe(true);
    expect([...progress].sort((a, b) => a - b)).toEqual(progress);
    expect(followed.stderr).toMatch(new RegExp(`✓ ${echo} \\[${fixture.name}\\] ok in \\d+ ms`));
    expect(followed.stderr).toMatch(/✗ nope error in \d+ ms/);
    expect(followed.stderr).toMatch(/calls fx_\w+__echo, nope · \d+ in \/ \d+ out tokens/);

    // On an existing thread, by agent id, without --follow: only the answer, on stdout.
    const again = await run(['run', '--agent', agent.id, 'again', '--thread', threadId!]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^The answer: echo: hi/);
    const secondId = /^run (run_\w+) on thread/m.exec(again.stderr)?.[1];

    await waitFor(async () => {
      const listed = await run(['runs', 'list', '--agent', agent.name]);
      return listed.code === 0 && listed.stdout.includes(runId!) && listed.stdout.includes(secondId!) && !listed.stdout.includes('running');
    }, 30_000, 'both runs listed as ended');
    const listed = await run(['runs', 'list', '--thread', threadId!, '--limit', '1']);
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+STOP\s+TURNS/);
    expect(listed.stdout).toMatch(new RegExp(`^${secondId}\\s+completed\\s+answer\\s+2\\s.*\\s${threadId}\\s+${agent.name}$`, 'm'));
    expect(listed.stdout).not.toContain(agent.id);
    expect(listed.stderr).toMatch(/^more: agent-engine runs list --cursor \S+/m);

    const shown = await run(['runs', 'show', runId!]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('status:   completed (answer)');
    // Names where there are names; the agent's id beside its name, for the commands that take one.
    expect(shown.stdout).toContain(`agent:    ${agent.name} (${agent.id})`);
    expect(shown.stdout).toMatch(new RegExp(`turn 1  ${echo} \\[${fixture.name}\\]  ok`));
    expect(shown.stdout).not.toContain(fixture.id);
    // Each tool call with its arguments and (the start of) its result.
    expect(shown.stdout).toContain(`${echo} [${fixture.name}]  ok`);
    expect(shown.stdout).toMatch(new RegExp(`  ${echo} .*\n    arguments: \\{"text": "hi"\\}\n    result: echo: hi\n`));
    expect(shown.stdout).toMatch(/ {2}nope .*\n {4}arguments: \{\}\n {4}result: A tool with the name nope was not found/);


    const agents = await run(['agents', 'list', '--json']);
    expect(JSON.parse(agents.stdout).map((a: { name: string }) => a.name)).toContain(agent.name);
  });

  test('runs list and runs show name a deleted agent, and keep the id of an integration deleted since', async () => {
    const gone = await insertIntegration(h.engine.db, {
      name: `gone_${suffix()}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await createAgent([{ toolCalls: [{ name: `${gone.name}__echo`, arguments: { text: 'hi' } }] }, { text: 'done' }], [gone.id]);
    const followed = await run(['run', '--agent', agent.name, 'hello']);
    expect(followed.code).toBe(0);
    const runId = /^run (run_\w+)/m.exec(followed.stderr)![1];
    const call = (method: string, path: string, body?: unknown) => fetch(`${h.url}${path}`, {
      method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
    });
    expect((await call('PATCH', `/v1/agents/${agent.id}`, { integrationIds: [] })).status).toBe(200);
    expect((await call('DELETE', `/v1/integrations/${gone.id}`)).status).toBe(204);
    expect((await call('DELETE', `/v1/agents/${agent.id}`)).status).toBe(200); // disabled: its runs refer to it

    const listed = await run(['runs', 'list', '--agent', agent.id]);
    expect(listed.stdout).toMatch(new RegExp(`^${runId}\\s.*\\s${agent.name}$`, 'm'));
    // Runs of several agents: names from the agents' list, and the deleted one's on its own.
    const other = await createAgent([{ text: 'ok' }]);
    const otherRun = await run(['run', '--agent', other.name, 'hi']);
    expect(otherRun.code).toBe(0);
    const otherRunId = /^run (run_\w+)/m.exec(otherRun.stderr)![1];
    const all = await run(['runs', 'list', '--limit', '100']);
    expect(new Set([...all.stdout.matchAll(/\s(cli_\w+)$/gm)].map((m) => m[1])).size).toBeGreaterThan(1);
    // Other test files share the database: only this test's runs are looked at by line.
    expect(all.stdout).toMatch(new RegExp(`^${runId}\\s.*\\s${agent.name}$`, 'm'));
    expect(all.stdout).toMatch(new RegExp(`^${otherRunId}\\s.*\\s${other.name}$`, 'm'));
    const shown = await run(['runs', 'show', runId]);
    expect(shown.stdout).toContain(`agent:    ${agent.name} (${agent.id})`);
    expect(shown.stdout).toContain(`${gone.name}__echo [${gone.id}]  ok`);
  });

  test('threads list and threads show read a conversation: roles, tool calls with their arguments, results', async () => {
    const echo = `${fixture.name}__echo`;
    const agent = await createAgent([
      { toolCalls: [{ name: echo, arguments: { text: 'hi' } }, { name: 'nope', arguments: {} }] },
      { text: 'The answer: {{tool_results}}' },
    ], [fixture.id]);
    const post = async (path: string, body: unknown) => (await (await fetch(`${h.url}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    })).json()) as { id: string };
    const threadId = (await post('/v1/threads', { agentId: agent.name })).id;
    const runId = (await post(`/v1/threads/${threadId}/runs`, { input: 'hello' })).id;
    await fetch(`${h.url}/v1/runs/${runId}?waitMs=30000`);

    const threads = await run(['threads', 'list', '--agent', agent.name]);
    expect(threads.stdout).toMatch(new RegExp(`^${threadId}  ${agent.name}  5 messages`, 'm'));
    const conversation = await run(['threads', 'show', threadId]);
    expect(conversation.code).toBe(0);
    expect(conversation.stdout).toContain(`— run ${runId} · agent ${agent.name} —\nuser: hello\nassistant calls ${echo} (`);
    expect(conversation.stdout).toMatch(new RegExp(`\n  arguments: \\{"text": "hi"\\}\nassistant calls nope \\(`));
    expect(conversation.stdout).toMatch(new RegExp(`\ntool ${echo} \\(\\S+\\): echo: hi\n`));
    expect(conversation.stdout).toMatch(/\nassistant: The answer: echo: hi\n/);
  });

  test('a run by another agent on a thread is visible: run says whose thread it is, threads show names each run\'s agent', async () => {
    const owner = await createAgent([{ text: 'the owner answers' }]);
    const guest = await createAgent([{ text: 'the guest answers' }]);
    const first = await run(['run', '--agent', owner.name, 'hello']);
    expect(first.code).toBe(0);
    const [, ownRun, threadId] = /^run (run_\w+) on thread (thr_\w+)/m.exec(first.stderr)!;

    const borrowed = await run(['run', '--agent', guest.name, 'and you?', '--thread', threadId]);
    expect(borrowed.code).toBe(0);
    expect(borrowed.stdout).toBe('the guest answers\n');
    const guestRun = /^run (run_\w+) on thread/m.exec(borrowed.stderr)![1];
    expect(borrowed.stderr).toContain(`run ${guestRun} on thread ${threadId} (agent ${guest.name}; the thread is ${owner.name}'s)`);

    // Without --agent, the thread's own agent, although the guest ran the latest turn.
    const back = await run(['run', 'and again', '--thread', threadId]);
    expect(back.code).toBe(0);
    expect(back.stdout).toBe('the owner answers\n');
    expect(back.stderr).toMatch(new RegExp(`^run run_\\w+ on thread ${threadId} \\(agent ${owner.name}\\)$`, 'm'));
    const backRun = /^run (run_\w+) on thread/m.exec(back.stderr)![1];
    expect(((await (await fetch(`${h.url}/v1/runs/${backRun}`)).json()) as { agentId: string }).agentId).toBe(owner.id);

    const shown = await run(['threads', 'show', threadId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^thread ${threadId} · agent ${owner.name} \\(${owner.id}\\) · created `));
    expect(shown.stdout).toContain(`— run ${ownRun} · agent ${owner.name} —\nuser: hello\nassistant: the owner answers\n`);
    expect(shown.stdout).toContain(`— run ${guestRun} · agent ${guest.name} (not the thread's agent) —\nuser: and you?\nassistant: the guest answers\n`);
    expect(shown.stdout).toContain(`— run ${backRun} · agent ${owner.name} —\nuser: and again\n`);

    // A run needs an agent or a thread to take it from.
    const neither = await run(['run', 'hi']);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain('run needs --agent <name|id>, or --thread <id> to use the thread\'s agent');
  });

  test('Ctrl-C with stdin not a terminal cancels the run without asking, and exits 1', async () => {
    const agent = await createAgent([{ text: 'too late', delayMs: 30_000 }]);
    const child = cli(['run', '--agent', agent.name, 'wait', '--follow']);
    await waitFor(async () => child.out.stderr.includes('turn 1'), 30_000, 'the first turn to show');
    child.child.kill('SIGINT');
    const result = await child.ended;
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cancelling run run_\w+/);
    expect(result.stderr).toContain('run cancelled (cancelled)');
    expect(result.stdout).toBe('');
  });

  test('runs fork starts a run from a turn of another and prints its answer; a turn not reached is refused', async () => {
    const agent = await createAgent([
      { toolCalls: [{ name: `${fixture.name}__echo`, arguments: { text: 'first' } }] },
      { text: 'second step: {{tool_results}}' },
    ], [fixture.id]);
    const original = await run(['run', '--agent', agent.name, 'go']);
    expect(original.stdout).toBe('second step: echo: first\n');
    const runId = /^run (run_\w+) on thread/m.exec(original.stderr)![1];
    const other = await createAgent([{ text: 'unused' }, { text: 'other agent: {{tool_results}}' }]);

    const forked = await run(['runs', 'fork', runId, '--at', '2', '--agent', other.name, '--json']);
    expect(forked.code).toBe(0);
    expect(forked.stderr).toMatch(new RegExp(`^run run_\\w+ on thread thr_\\w+ \\(forked from run ${runId} at turn 2\\)$`, 'm'));
    expect(JSON.parse(forked.stdout)).toMatchObject({ agentId: other.id, forkedFrom: { runId, turn: 2 }, output: 'other agent: echo: first' });

    const past = await run(['runs', 'fork', runId, '--at', '4']);
    expect(past.code).toBe(3);
    expect(past.stderr).toContain('failed with 409: body.atTurn: 4 is not a turn to fork at');
    const noTurn = await run(['runs', 'fork', runId]);
    expect(noTurn.code).toBe(2);
    expect(noTurn.stderr).toContain('runs fork needs --at <turn>');
  });

  test('errors are readable and exit with codes scripts can use', async () => {
    const usage = await run(['run', 'no agent given']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('error: run needs --agent <name|id>');
    expect((await run(['runs', 'show'])).code).toBe(2);
    expect((await run(['runs', 'list', '--follow'])).stderr).toContain('--follow does not apply to "runs list"');
    expect((await run(['run', '--agent', 'no_such_agent', 'hi'])).code).toBe(2);

    const missing = await run(['runs', 'show', 'run_missing']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('GET /v1/runs/run_missing failed with 404: Run run_missing does not exist');

    const closedPort = await freePort();
    const unreachable = await run(['agents', 'list', '--url', `http://127.0.0.1:${closedPort}`]);
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain(`Cannot reach the API at http://127.0.0.1:${closedPort}`);
  });

  test('integrations import posts the file, and says so plainly when the API has no import endpoint', async () => {
    const dir = testStack().tmpDir;
    const bad = path.join(dir, `bad-${suffix()}.json`);
    await fs.writeFile(bad, '{ not json');
    const badRun = await run(['integrations', 'import', bad]);
    expect(badRun.code).toBe(2);
    expect(badRun.stderr).toContain(`Cannot read ${bad} as JSON`);

    // An API without the endpoint: the engine's own 404 handling, nothing else.
    const bare = Fastify();
    await bare.register(problemHandlers);
    const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
    try {
      const file = path.join(dir, `mcp-${suffix()}.json`);
      await fs.writeFile(file, JSON.stringify({ mcpServers: { fx: { command: 'node', args: ['server.js'] } } }));
      const result = await run(['integrations', 'import', file], bareUrl);
      expect(result.code).toBe(3);
      expect(result.stderr).toContain('This API cannot import integrations yet (POST /v1/integrations/import is not there)');
    } finally {
      await bare.close();
    }
  });
});
