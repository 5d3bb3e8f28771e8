import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { runCli } from '../support/cli';
import { logger, startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';

const CLEAR_LINE = '\r\x1b[2K';

describe('the CLI in a terminal', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await engine?.close();
  });

  test('Ctrl-C asks whether to cancel, the spinner stays off the question, and "y" cancels the run', async () => {
    const res = await fetch(`${url}/v1/agents`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `tty_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'too late', delayMs: 30_000 }] } }),
    });
    const agent = (await res.json()) as { name: string };
    const cli = runCli(['run', '--agent', agent.name, 'wait', '--follow'], url, { terminal: true });
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
