import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { insertIntegration } from '../../store/integrations/integrations';
import { withCliEngine } from '../support/cli';
import { waitFor } from '../support/wait';

const CLEAR_LINE = '\r\x1b[2K';
const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
/** what an LLM or a tool could say to a terminal: write the clipboard (OSC 52), clear the screen, the same by the C1 CSI, overwrite a line */
const HOSTILE = 'a\x1b]52;c;SGVsbG8=\x07b\x1b[2Jc\u009b2Jd\rcovered\x7f';
/** any of those control characters, raw (but the CLI's own clearing of the spinner's line, and a terminal's CR before LF) */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x07\x7f\u0080-\u009f]|\x1b(?!\[2K)|\r(?!\n|\x1b\[2K)/;

describe('the CLI in a terminal', () => {
  const h = withCliEngine();

  test('control characters from the LLM, tools and the API reach the terminal escaped, and --json stays the same JSON', async () => {
    const fx = await insertIntegration(h.engine.db, {
      name: `tty_fx_${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const res = await fetch(`${h.url}/v1/agents`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `tty_${randomUUID().slice(0, 8)}`, integrationIds: [fx.id],
        model: { provider: 'scripted', script: [{ text: HOSTILE, toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: HOSTILE } }] }, { text: HOSTILE }] },
      }),
    });
    const agent = (await res.json()) as { name: string };
    const followed = h.cli(['run', '--agent', agent.name, 'go', '--follow'], { terminal: true });
    expect(await followed.done).toBe(0);
    const screen = followed.out.screen;
    expect(screen).not.toMatch(RAW_CONTROL);
    // Escaped visibly, as JSON writes them.
    expect(screen).toContain('a\\u001b]52;c;SGVsbG8=\\u0007b\\u001b[2Jc\\u009b2Jd\\u000dcovered\\u007f');
    expect(screen).toContain(CLEAR_LINE); // the CLI's own sequences are not escaped

    const runId = /run (run_\w+) on thread/.exec(screen)![1];
    const shown = h.cli(['runs', 'show', runId], { terminal: false });
    expect(await shown.done).toBe(0);
    expect(shown.out.screen).not.toMatch(RAW_CONTROL);
    expect(shown.out.screen).toContain('result: echo: a\\u001b]52;c;SGVsbG8=');

    const json = h.cli(['runs', 'show', runId, '--json'], { terminal: false });
    expect(await json.done).toBe(0);
    expect(json.out.screen).not.toMatch(RAW_CONTROL);
    expect((JSON.parse(json.out.screen) as { output: string }).output).toBe(HOSTILE);

    // An error from the API that repeats what it was given.
    const missing = h.cli(['runs', 'show', 'run_\x1b[2J\x1b]52;c;eA==\x07'], { terminal: false });
    expect(await missing.done).toBe(3);
    expect(missing.out.screen).not.toMatch(RAW_CONTROL);
    expect(missing.out.screen).toContain('404');
  });

  test('run --follow prints the model\'s words as they come, escaped across pieces (a CR before an LF in the next piece stays a line break)', async () => {
    // Three pieces of 20 characters: the first ends with the CR, the second begins with the LF.
    const pieces = ['First line of words\r', '\nsecond line, then: ', '\x1b[2Jno clear, sorry.'];
    expect(pieces.map((p) => p.length)).toEqual([20, 20, 20]);
    const res = await fetch(`${h.url}/v1/agents`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `tty_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: pieces.join(''), chunks: 3, delayMs: 3_000 }] } }),
    });
    const agent = (await res.json()) as { name: string };
    const followed = h.cli(['run', '--agent', agent.name, 'go', '--follow'], { terminal: true });
    try {
      // The first piece is on screen while the run still goes on.
      await waitFor(async () => followed.out.screen.includes('First line of words'), 30_000, 'the first words');
      expect(followed.out.screen).not.toContain('run completed');
      expect(followed.out.screen).not.toContain('second line');
      expect(await followed.done).toBe(0);
    } finally {
      followed.child.kill();
    }
    const screen = followed.out.screen;
    // The CR was held back for the LF: a line break (the terminal adds its own CR), never an escaped \u000d.
    expect(screen).toMatch(/ {2}First line of words\r+\nsecond line, then: \\u001b\[2Jno clear, sorry\.\r?\n/);
    expect(screen).not.toContain('\\u000d');
    // The turn's line does not repeat the words it showed as they came.
    expect(screen).not.toContain('"First line of words');
  });

  test('Ctrl-C asks whether to cancel, the spinner stays off the question, and "y" cancels the run', async () => {
    const res = await fetch(`${h.url}/v1/agents`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `tty_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'too late', delayMs: 30_000 }] } }),
    });
    const agent = (await res.json()) as { name: string };
    const cli = h.cli(['run', '--agent', agent.name, 'wait', '--follow'], { terminal: true });
    try {
      await waitFor(async () => cli.out.screen.includes('turn 1: thinking'), 30_000, 'the spinner to show the first turn');
      cli.type('\x03');
      await waitFor(async () => /Cancel run run_\w+\? \[y\/N\] /.test(cli.out.screen), 10_000, 'the question');
      // The spinner ticks every 100 ms: over several ticks, nothing may be drawn over the question.
      await new Promise((r) => setTimeout(r, 800));
      const question = cli.out.screen.lastIndexOf('[y/N] ');
      // (readline may move the cursor after its prompt; it must not be cleared or drawn over.)
      const since = cli.out.screen.slice(question);
      expect(since).not.toContain('\x1b[2K');
      expect(since).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
      expect(cli.out.screen.slice(0, question)).toContain(CLEAR_LINE); // the spinner was there before

      cli.type('y\r');
      expect(await cli.done).toBe(1);
      const after = cli.out.screen.slice(question);
      expect(after).toMatch(/cancelling run run_\w+/);
      expect(after).toContain('run cancelled (cancelled)');
    } finally {
      if (cli.child.exitCode === null) cli.child.kill();
    }
  });
});
