import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../platform/ports';
import { interrupt, killEverything, npmStart, processesUsing, waitForOutput, type Started } from '../support/npm-start';
import { testStack } from '../support/stack-env';

/** The demo's lines in the order a person reads them: each turn, then its tool call, then the end. */
function expectDemoInOrder(output: string): void {
  const lines = output.split('\n').filter((line) => /^demo: /.test(line)).map((line) => line.replace(/ → .*/, ''));
  expect(lines).toEqual([
    expect.stringMatching(/^demo: started run run_\w+/), 'demo: turn 1 done', 'demo:   tool get_weather',
    'demo: turn 2 done', 'demo: run completed (answer) after 2 turns', expect.stringMatching(/^demo: answer: The weather tool is not available/),
  ]);
}

describe('npm start', () => {
  const dataDir = path.join(testStack().tmpDir, 'npm-start');
  let started: Started | undefined;
  afterAll(() => killEverything(started, dataDir));

  test('runs the demo, stops cleanly on Ctrl-C, and serves earlier runs after a restart', async () => {
    const port = await freePort();
    const env = {
      DATA_DIR: dataDir, PORT: String(port), TEMPORAL_UI_PORT: String(await freePort()),
      TEMPORAL_CLI_PATH: testStack().temporalCliPath, TASK_QUEUE: `npm-start-${process.pid}`,
      // No key in the environment: npm start makes its own in the data dir.
      SECRETS_KEY: '',
    };
    started = npmStart(env);
    await waitForOutput(started!, 'Press Ctrl-C to stop', 90_000, 'the demo to finish');
    const out = started.output();
    expect(out).toContain(`Console:          http://127.0.0.1:${port}/console`);
    expect(out).toContain(`API:              http://127.0.0.1:${port}`);
    const consolePage = await fetch(`http://127.0.0.1:${port}/console`);
    expect({ status: consolePage.status, type: consolePage.headers.get('content-type') }).toEqual({ status: 200, type: 'text/html; charset=utf-8' });
    await consolePage.text();
    expect(out).toMatch(/Temporal Web UI: {2}http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows/);
    expect(out).toMatch(/demo: +tool get_weather → error: A tool with the name get_weather was not found/);
    expect(out).toContain('demo: run completed (answer) after 2 turns');
    expectDemoInOrder(out);
    const runId = /demo: started run (run_\w+)/.exec(out)![1];
    const keyFile = path.join(dataDir, 'secrets.key');
    expect(out).toContain(`created the secrets key: ${keyFile}`);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(Buffer.from(fs.readFileSync(keyFile, 'utf8').trim(), 'base64')).toHaveLength(32);
    // Where `agent-engine mcp` finds this engine; it holds the database password, so it is the owner's alone.
    const engineJson = path.join(dataDir, 'engine.json');
    expect(fs.statSync(engineJson).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(engineJson, 'utf8'))).toMatchObject({
      apiUrl: `http://127.0.0.1:${port}`, databaseUrl: expect.stringMatching(/^postgres:\/\//), taskQueue: env.TASK_QUEUE,
    });

    await interrupt(started);
    expect(processesUsing(dataDir)).toEqual([]);
    expect(fs.existsSync(engineJson)).toBe(false);

    started = npmStart(env);
    await waitForOutput(started!, 'Press Ctrl-C to stop', 90_000, 'the second start');
    // The demo agent exists now, with its earlier thread and run: the demo reads the same.
    expectDemoInOrder(started.output());
    const res = await fetch(`http://127.0.0.1:${port}/v1/runs/${runId}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: runId, status: 'completed', stopReason: 'answer', turns: 2 });
    expect(started.output()).not.toContain('created the secrets key');
    await interrupt(started);
    expect(started.output()).not.toMatch(/shutdown step failed/);
    expect(processesUsing(dataDir)).toEqual([]);
  });
});
