import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { withCliEngine } from '../support/cli';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const WAIT_MS = 60_000;

describe('approvals from the CLI', () => {
  const h = withCliEngine();
  let fx: Integration;

  const agentCalling = async (text: string) => (await insertAgent(h.engine.db, {
    name: `cli_${randomUUID().slice(0, 8)}`, integrationIds: [fx.id],
    model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text } }] }, { text: '{{tool_results}}' }] },
  })).name;
  const run = (args: string[], terminal: boolean) => h.cli(args, { terminal });

  beforeAll(async () => {
    fx = await insertIntegration(h.engine.db, {
      name: `fx-${randomUUID().slice(0, 8)}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
  });

  test('run --follow on a terminal asks about the call, and "y" approves it', async () => {
    const follow = run(['run', '--agent', await agentCalling('hi'), 'go', '--follow'], true);
    await waitFor(async () => follow.out.screen.includes(`Approve ${fx.name}__echo {"text":"hi"}? [y/N] `), WAIT_MS, 'the question');
    follow.type('y\r');
    expect(await follow.done).toBe(0);
    expect(follow.out.screen).toContain(`✓ approved ${fx.name}__echo`);
    // An approved call runs, and shows so.
    expect(follow.out.screen).toMatch(new RegExp(`✓ approved ${fx.name}__echo[^]*→ ${fx.name}__echo \\[${fx.name}\\][^]*✓ ${fx.name}__echo \\[${fx.name}\\] ok in`));
    expect(follow.out.screen).toContain('echo: hi');
  });

  test('the question shows control characters in the arguments escaped', async () => {
    // JSON.stringify escapes C0 characters in the arguments, but leaves C1 ones (CSI: clear the screen) raw.
    const follow = run(['run', '--agent', await agentCalling('x\u009b2Jy'), 'go', '--follow'], true);
    await waitFor(async () => follow.out.screen.includes('? [y/N] '), WAIT_MS, 'the question');
    follow.type('n\r');
    expect(await follow.done).toBe(0);
    expect(follow.out.screen).toContain(`Approve ${fx.name}__echo {"text":"x\\u009b2Jy"}? [y/N] `);
    expect(follow.out.screen).not.toContain('\u009b');
  });

  test('without a terminal, run --follow prints the pending call and keeps following; approvals list and deny decide it', async () => {
    const follow = run(['run', '--agent', await agentCalling('there'), 'go', '--follow'], false);
    let runId = '';
    await waitFor(async () => {
      const m = /waits for approval: agent-engine approve\|deny (run_\w+) call_1_1/.exec(follow.out.screen);
      runId = m?.[1] ?? '';
      return Boolean(m);
    }, WAIT_MS, 'the pending call printed');
    expect(follow.out.screen).toContain(`? ${fx.name}__echo {"text":"there"}`);

    const list = run(['approvals', 'list'], false);
    expect(await list.done).toBe(0);
    expect(list.out.screen).toMatch(new RegExp(`${runId}  call_1_1  ${fx.name}__echo \\{"text":"there"\\}  expires `));

    const deny = run(['deny', runId, 'call_1_1', '--reason', 'not today'], false);
    expect(await deny.done).toBe(0);
    expect(deny.out.screen).toContain(`denied call_1_1 of run ${runId}`);
    expect(await follow.done).toBe(0);
    expect(follow.out.screen).toContain('Tool call denied by a reviewer: not today');
    expect(follow.out.screen).toContain(`✗ denied ${fx.name}__echo (not today)`);
    // The call never ran: after the denial, no start and no "error in 0 ms" as if it had.
    expect(follow.out.screen).not.toContain(`→ ${fx.name}__echo`);
    expect(follow.out.screen).not.toMatch(new RegExp(`✗ ${fx.name}__echo .*error in`));

    const again = run(['approve', runId, 'call_1_1'], false);
    expect(await again.done).toBe(3);
    expect(again.out.screen).toMatch(/already denied/);
  });
});
