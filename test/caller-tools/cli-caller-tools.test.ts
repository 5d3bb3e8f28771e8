import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { withCliEngine } from '../support/cli';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const WAIT_MS = 60_000;

describe('caller tools from the CLI', () => {
  const h = withCliEngine();

  test('run --caller-tools --follow prints each call with the command that answers it; tool-result answers it', async () => {
    const agent = await insertAgent(h.engine.db, {
      name: `cli_callers_${randomUUID().slice(0, 8)}`,
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'read_clipboard', arguments: { format: 'text' } }] }, { text: '{{tool_results}}' }] },
    });
    const file = path.join(testStack().tmpDir, `caller-tools-${randomUUID().slice(0, 8)}.json`);
    await writeFile(file, JSON.stringify([{
      name: 'read_clipboard', description: 'The caller\'s clipboard', inputSchema: { type: 'object', properties: { format: { enum: ['text'] } } },
    }]));
    const follow = h.cli(['run', '--agent', agent.name, 'paste it', '--caller-tools', file, '--follow']);
    let runId = '';
    await waitFor(async () => {
      const m = /waits for its caller: agent-engine tool-result (run_\w+) call_1_1 "<result>" \[--error\]/.exec(follow.out.screen);
      runId = m?.[1] ?? '';
      return Boolean(m);
    }, WAIT_MS, 'the waiting call printed');
    expect(follow.out.screen).toContain('⇄ read_clipboard {"format":"text"} waits for its caller');

    const answer = h.cli(['tool-result', runId, 'call_1_1', 'hello from the clipboard']);
    expect(await answer.done).toBe(0);
    expect(answer.out.screen).toContain(`answered call_1_1 of run ${runId}`);
    expect(await follow.done).toBe(0);
    expect(follow.out.stdout).toContain('hello from the clipboard');
    expect(follow.out.screen).toMatch(/✓ read_clipboard ok in \d+ ms/);

    const again = h.cli(['tool-result', runId, 'call_1_1', 'twice', '--error']);
    expect(await again.done).toBe(3);
    expect(again.out.screen).toContain('no longer waits for a result: it was answered already');
  });

  test('a file that is not a JSON array is a usage error', async () => {
    const file = path.join(testStack().tmpDir, `caller-tools-${randomUUID().slice(0, 8)}.json`);
    await writeFile(file, '{"name": "x"}');
    const run = h.cli(['run', '--agent', 'whoever', 'go', '--caller-tools', file]);
    expect(await run.done).toBe(2);
    expect(run.out.screen).toContain('must hold a JSON array');
  });
});
