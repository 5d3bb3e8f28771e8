import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../../platform/ports';
import { interrupt, killEverything, npmStart, processesUsing, waitForOutput, type Started } from '../support/npm-start';
import { testStack } from '../support/stack-env';
import { waitFor, within } from '../support/wait';

/** The demo's lines in the order a person reads them: each turn, then its tool call, then the end. */
function expectDemoInOrder(output: string): void {
  const lines = output.split('\n').filter((line) => /^demo: /.test(line)).map((line) => line.replace(/ → .*/, ''));
  expect(lines).toEqual([
    expect.stringMatching(/^demo: started run run_\w+/), 'demo: turn 1 done', 'demo:   tool get_weather',
    'demo: turn 2 done', 'demo: run completed (answer) after 2 turns', expect.stringMatching(/^demo: answer: The weather tool is not available/),
  ]);
}

/** Each process's metrics, on a line of its own, counting the demo's run (once each count has moved:
 *  the worker counts the run's end, and the SDK the workflow's completion, just after the API can answer). */
async function expectMetrics(output: string): Promise<void> {
  const api = /^Metrics \(API\): {4}(http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(output)?.[1];
  const worker = /^Metrics \(worker\): (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(output)?.[1];
  const temporal = /^Metrics \(Temporal SDK\): (http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(output)?.[1];
  expect({ api, worker, temporal }).toEqual({ api: expect.any(String), worker: expect.any(String), temporal: expect.any(String) });
  const expected: [string, RegExp][] = [
    [temporal!, /^temporal_workflow_completed\{.*\} [1-9]/m],
    [api!, /^agent_engine_runs_started_total\{agent="[^"]+",process="api"\} [1-9]/m],
    [worker!, /^agent_engine_runs_ended_total\{status="completed",stop_reason="answer",agent="[^"]+",process="worker"\} [1-9]/m],
  ];
  for (const [url, pattern] of expected) {
    let text = '';
    await waitFor(async () => pattern.test(text = await (await fetch(url)).text()), 10_000, `${pattern.source} at ${url}`).catch(() => undefined);
    expect(text).toMatch(pattern);
  }
}

describe('npm start', () => {
  const dataDir = path.join(testStack().tmpDir, 'npm-start');
  let started: Started | undefined;
  afterAll(() => killEverything(started, dataDir));

  test('runs the demo, stops cleanly on Ctrl-C, and serves earlier runs after a restart', async () => {
    const port = await freePort();
    // Ports set as on a shared machine: used as they are, at each start.
    const [temporalPort, postgresPort] = [await freePort(), await freePort()];
    const env = {
      DATA_DIR: dataDir, PORT: String(port), TEMPORAL_UI_PORT: String(await freePort()),
      TEMPORAL_PORT: String(temporalPort), POSTGRES_PORT: String(postgresPort),
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
    expect(out).toContain(`Temporal Web UI:  http://127.0.0.1:${env.TEMPORAL_UI_PORT}/namespaces/default/workflows`);
    expect(out).toContain(`Temporal server:  127.0.0.1:${temporalPort}\n`);
    // Where a person's psql goes; the password stays in the data dir.
    expect(out).toContain(`PostgreSQL:       postgres://postgres@127.0.0.1:${postgresPort}/engine\n`);
    expect(out).not.toContain(fs.readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim());
    await expectMetrics(out);
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
    expect(started.output()).toContain(`PostgreSQL:       postgres://postgres@127.0.0.1:${postgresPort}/engine\n`);
    await interrupt(started);
    expect(started.output()).not.toMatch(/shutdown step failed/);
    expect(processesUsing(dataDir)).toEqual([]);
  });
});

/** A port another program holds on loopback, as on a shared machine. */
async function holdPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, release: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('npm start with a port set that another program holds', () => {
  const dataDir = path.join(testStack().tmpDir, 'npm-start-taken');
  let started: Started | undefined;

  test.each(['TEMPORAL_PORT', 'TEMPORAL_UI_PORT', 'POSTGRES_PORT'])('%s taken: it stops at once, naming the setting and the port, and leaves nothing running', async (setting) => {
    const held = await holdPort();
    try {
      started = npmStart({
        DATA_DIR: dataDir, PORT: String(await freePort()), TEMPORAL_UI_PORT: String(await freePort()),
        TEMPORAL_CLI_PATH: testStack().temporalCliPath, TASK_QUEUE: `npm-start-taken-${process.pid}`, [setting]: String(held.port),
      });
      expect(await within(started.exited, 60_000, 'still running')).toBe(1);
      expect(started.output()).toContain(`${setting}=${held.port}: the port is taken`);
      expect(started.output()).not.toContain('Press Ctrl-C to stop');
      expect(processesUsing(dataDir)).toEqual([]);
    } finally {
      // One that did not stop by itself goes now, so that the next case's start finds the data dir free.
      killEverything(started, dataDir);
      await started?.exited;
      await held.release();
    }
  }, 120_000);
});
