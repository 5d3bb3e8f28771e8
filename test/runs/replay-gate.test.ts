import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { pendingApprovals } from '../../store/approvals';
import { insertIntegration } from '../../store/integrations/integrations';
import { startEngine, type Engine } from '../support/engine';
import { ROOT } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const MCP_FIXTURE = path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts');
const CHANGED_WORKFLOWS = path.join('test', 'fixtures', 'nondeterministic-workflows.ts');

interface Gate { code: number | null; stdout: string; stderr: string }

/** `npm run replay-gate -- …` as an operator runs it, against the test's Temporal server. */
async function replayGate(args: string[]): Promise<Gate> {
  const env = { ...process.env, TEMPORAL_ADDRESS: testStack().temporalAddress, TEMPORAL_NAMESPACE: 'default' };
  try {
    const { stdout, stderr } = await promisify(execFile)('npm', ['run', '--silent', 'replay-gate', '--', ...args], { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number | null; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * The replay gate (issue 43): the histories of the engine's recent runs, fetched from the Temporal
 * server, replay against today's workflow code, and a workflow build with a real nondeterministic
 * change fails the gate, naming the runs it would break: the open one waiting for approval too.
 */
describe('the replay gate over recent runs', () => {
  let engine: Engine;
  let finished: string;
  let waiting: string;
  let query: string;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    query = `TaskQueue = '${engine.taskQueue}'`;
    const integration = await insertIntegration(engine.db, {
      name: `gate${randomUUID().slice(0, 8)}`, approval: { default: 'never', tools: { env: 'always' } },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', MCP_FIXTURE], cwd: ROOT },
    });
    const tool = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name: `${integration.name}__${name}`, arguments: args }] });
    // A run with an MCP tool call, to its end.
    const done = await engine.scriptedThread([tool('echo', { text: 'hi' }), { text: 'done {{tool_results}}' }], { integrationIds: [integration.id] });
    finished = await engine.start({ threadId: done.threadId, input: 'echo' });
    expect(await engine.result(finished)).toMatchObject({ status: 'completed' });
    // A run left waiting for a decision: the kind of run a deploy of a changed workflow would break.
    const held = await engine.scriptedThread([tool('env', { name: 'HOME' }), { text: 'never reached' }], { integrationIds: [integration.id] });
    waiting = await engine.start({ threadId: held.threadId, input: 'ask first' });
    await waitFor(async () => (await pendingApprovals(engine.db, waiting)).length === 1, 60_000, 'the run to wait for approval');
    // Visibility lags a little behind the runs: the gate lists through it.
    await waitFor(async () => (await engine.client.workflow.count(query)).count === 2, 30_000, 'both runs to be listed');
  });

  afterAll(async () => {
    await engine?.client.workflow.getHandle(waiting).terminate('the replay gate test is over').catch(() => undefined);
    await engine?.close();
  });

  test('today\'s workflow bundle replays both runs, the open one included: exit 0, one ok line each, histories written', async () => {
    const out = path.join(testStack().tmpDir, `replay-gate-${randomUUID()}`);
    const gate = await replayGate(['--query', query, '--bundle', testStack().workflowBundlePath, '--limit', '10', '--out', out]);
    expect(gate).toMatchObject({ code: 0, stderr: '' });
    const lines = gate.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^replaying 2 run\(s\) \(1 open\) of namespace default where TaskQueue = 'test-[\w-]+', against the bundle /);
    expect(lines.filter((l) => l.startsWith('ok '))).toEqual(expect.arrayContaining([
      expect.stringMatching(new RegExp(`^ok +${finished} run [\\w-]+ \\(completed\\)$`)),
      expect.stringMatching(new RegExp(`^ok +${waiting} run [\\w-]+ \\(running\\)$`)),
    ]));
    expect(lines.at(-1)).toBe('2 ok, 0 failed (0 nondeterministic)');
    // Written as `temporal workflow show --output json` writes them: the replay of test/runs/histories/ reads them too.
    const files = fs.readdirSync(out).sort();
    expect(files).toHaveLength(2);
    for (const id of [finished, waiting]) expect(files).toContainEqual(expect.stringMatching(new RegExp(`^${id}\\.[\\w-]+\\.json$`)));
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import', 'tsx', 'test/support/replay-histories.ts', out, testStack().workflowBundlePath,
    ], { cwd: ROOT });
    expect(stdout.trim().split('\n')).toEqual(files.map((f) => `ok ${f}`));
  });

  test('a workflow build with a nondeterministic change fails: exit 1, a nondeterminism message naming each run', async () => {
    const gate = await replayGate(['--query', query, '--workflows', CHANGED_WORKFLOWS]);
    expect(gate).toMatchObject({ code: 1, stderr: '' });
    const lines = gate.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^replaying 2 run\(s\) \(1 open\) .* against test\/fixtures\/nondeterministic-workflows\.ts \(bundled now\)$/);
    for (const runId of [finished, waiting]) {
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^FAIL ${runId} run [\\w-]+ \\(\\w+\\): DeterminismViolationError: .*Nondeterminism error: .+`)));
    }
    expect(lines).toContain('0 ok, 2 failed (2 nondeterministic)');
  });

  test('a usage error or an unreachable server is exit 2, before any replay', async () => {
    const usage = await replayGate(['--limit', '5000']);
    expect(usage).toMatchObject({ code: 2, stdout: '' });
    expect(usage.stderr).toContain('--limit must be a whole number from 1 to 1000');
    const env = { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const unreachable = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'worker/replay-gate.ts'], { cwd: ROOT, env })
      .then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => err);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/could not list the runs of namespace default: .*127\.0\.0\.1:1/);
  });
});
