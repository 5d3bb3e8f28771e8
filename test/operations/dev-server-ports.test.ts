import fs from 'node:fs/promises';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort } from '../../platform/ports';
import { ConfigError } from '../../platform/config';
import { startDevServer, type DevServer } from '../../platform/temporal/dev-server';
import { logger } from '../support/engine';
import { testStack } from '../support/stack-env';

/** A CLI that, on its first start-dev only, writes `line` to `stream` (1 or 2) and exits 1; then the real one. */
async function failingOnce(dir: string, line: string, stream: 1 | 2): Promise<string> {
  const firstStart = path.join(dir, 'first-start-done');
  const cli = path.join(dir, 'temporal');
  await fs.writeFile(cli, [
    '#!/bin/sh',
    `if [ "$2" = start-dev ] && [ ! -e '${firstStart}' ]; then`,
    `  touch '${firstStart}'`,
    `  echo '${line}' >&${stream}`,
    '  exit 1',
    'fi',
    `exec '${testStack().temporalCliPath}' "$@"`,
    '',
  ].join('\n'), { mode: 0o755 });
  return cli;
}

/** The dev server started through `cli`, with its warnings kept; its port preferred, or set (TEMPORAL_PORT). */
async function startWatched(cli: string, dir: string, setPort?: number): Promise<{ server: DevServer; warned: unknown[]; preferredPort: number }> {
  const warned: unknown[] = [];
  const watching = Object.assign(Object.create(logger) as typeof logger, {
    warn: (...args: unknown[]) => warned.push(args),
  });
  const preferredPort = setPort ?? await freePort();
  const server = await startDevServer({
    cliPath: cli, dataDir: path.join(dir, 'data'), namespace: 'default',
    port: setPort ? { set: setPort, setting: 'TEMPORAL_PORT' } : { preferred: preferredPort }, uiPort: { preferred: await freePort() },
    retention: '1d', logger: watching,
  });
  return { server, warned, preferredPort };
}

/**
 * A port the dev server was given can be taken by another program between the check that it is
 * free and the server's bind (two `npm start`s at once both prefer 7233). The server then exits at
 * once; the start tries again on other ports. The CLI here is the real one behind a script that,
 * on its first start only, exits as the server does when its port is taken.
 */
describe('the Temporal dev server of npm start, when its port is taken as it starts', () => {
  let server: DevServer | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  test('starts on other ports, and says so', async () => {
    const dir = await fs.mkdtemp(path.join(testStack().tmpDir, 'dev-server-ports-'));
    const cli = await failingOnce(dir, 'level=ERROR msg="listen tcp 127.0.0.1:7233: bind: address already in use"', 2);
    const started = await startWatched(cli, dir);
    server = started.server;
    const { warned, preferredPort } = started;

    expect(server.address).not.toBe(`127.0.0.1:${preferredPort}`);
    const connection = await Connection.connect({ address: server.address });
    try {
      expect((await connection.workflowService.getSystemInfo({})).serverVersion).toBeTruthy();
    } finally {
      await connection.close();
    }
    expect(warned).toEqual([[{ port: preferredPort, uiPort: expect.any(Number) }, expect.stringContaining('taken')]]);
  }, 120_000);

  // A set port is the user's choice: never another one in its place.
  test('a port the user set (TEMPORAL_PORT), taken as the server binds it, stops the start with an error naming the setting', async () => {
    const dir = await fs.mkdtemp(path.join(testStack().tmpDir, 'dev-server-set-port-'));
    const port = await freePort();
    const cli = await failingOnce(dir, `level=ERROR msg="listen tcp 127.0.0.1:${port}: bind: address already in use"`, 2);
    const outcome = await startWatched(cli, dir, port).then((s): DevServer | Error => s.server, (err: Error) => err);
    if (!(outcome instanceof Error)) await outcome.stop();
    expect(outcome).toBeInstanceOf(ConfigError);
    expect((outcome as Error).message).toMatch(new RegExp(`^TEMPORAL_PORT=${port}: the port is taken`));
  }, 120_000);

  // Seen once in CI: the server exited with code 1, its stderr empty. Whatever took it down as it
  // started (a port the CLI picks itself, such as its metrics port), the start tries again, and the
  // warning carries what the server wrote on either stream.
  test('a server that exits as it starts for another reason, saying why on stdout, is started again on other ports', async () => {
    const dir = await fs.mkdtemp(path.join(testStack().tmpDir, 'dev-server-exits-'));
    const cli = await failingOnce(dir, 'the metrics listener could not start', 1);
    const { server: again, warned, preferredPort } = await startWatched(cli, dir);
    try {
      expect(again.address).not.toBe(`127.0.0.1:${preferredPort}`);
      expect(warned).toEqual([[
        { port: preferredPort, uiPort: expect.any(Number), output: expect.stringContaining('the metrics listener could not start') },
        expect.stringContaining('exited as it started'),
      ]]);
    } finally {
      await again.stop();
    }
  }, 120_000);
});
