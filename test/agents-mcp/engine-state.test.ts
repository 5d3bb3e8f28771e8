import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/client';
import { insertAgent } from '../../store/agents';
import { engineStateFile, readEngineState, removeEngineState, writeEngineState, type EngineState } from '../../platform/engine-state';
import { freePort } from '../../platform/ports';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

const BIN = path.join(__dirname, '..', '..', 'cli', 'agent-engine.js');

/** The pid of a process that has exited: a state file naming it was left by a killed engine. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

describe('agent-engine mcp finds a running engine through DATA_DIR', () => {
  let engine: Engine;
  let dataDir: string;
  let state: EngineState;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    dataDir = path.join(testStack().tmpDir, `engine-state-${randomUUID().slice(0, 8)}`);
    await fs.mkdir(dataDir, { recursive: true });
    state = {
      pid: process.pid, apiUrl: 'http://127.0.0.1:1', databaseUrl: testStack().databases.embedded,
      temporalAddress: testStack().temporalAddress, temporalNamespace: 'default', taskQueue: engine.taskQueue, startedAt: new Date().toISOString(),
    };
  });
  afterAll(async () => engine?.close());

  test('the state file is the owner\'s alone, read back while its process lives, and removed only by that process', async () => {
    await writeEngineState(dataDir, state);
    expect((await fs.stat(engineStateFile(dataDir))).mode & 0o777).toBe(0o600);
    expect(await readEngineState(dataDir)).toEqual(state);
    await removeEngineState(dataDir, state.pid + 1);
    expect(await readEngineState(dataDir)).toEqual(state);

    await writeEngineState(dataDir, { ...state, pid: await deadPid() });
    expect(await readEngineState(dataDir)).toBeUndefined();
    await writeEngineState(dataDir, state);
    await removeEngineState(dataDir);
    await expect(fs.access(engineStateFile(dataDir))).rejects.toThrow();
  });

  test('with only DATA_DIR set, it serves the agents of the engine that state file names', async () => {
    await writeEngineState(dataDir, state);
    const agent = await insertAgent(engine.db, { name: `found_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'hi' }] } });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({
      command: process.execPath, args: [BIN, 'mcp'], env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, stderr: 'inherit',
    }));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain(agent.name);
    } finally {
      await client.close();
      await removeEngineState(dataDir);
    }
  }, 60_000);

  test('without a running engine it says how to start one on stderr, and exits 2 when its client closes stdin', async () => {
    await writeEngineState(dataDir, { ...state, pid: await deadPid() });
    const child = spawn(process.execPath, [BIN, 'mcp'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.stdin.end();
    const code = await new Promise((r) => child.once('close', r));
    expect(code).toBe(2);
    expect(stderr).toContain(`agent-engine mcp found no running engine in ${dataDir}`);
    expect(stderr).toContain('start one with npm start and the same DATA_DIR, or set DATABASE_URL and TEMPORAL_ADDRESS');
  }, 60_000);

  test('started by an MCP client outside the repository, without a DATA_DIR, it tells the client why: every request fails with the reason, and a log message says it', async () => {
    const clientDir = await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-client-'));
    const logged: unknown[] = [];
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    client.setNotificationHandler('notifications/message', (n) => void logged.push(n.params));
    const transport = new StdioClientTransport({
      command: process.execPath, args: [BIN, 'mcp'], cwd: clientDir, env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn' }, stderr: 'ignore',
    });
    try {
      await client.connect(transport);
      const reason = `agent-engine mcp found no running engine in ${path.join(clientDir, '.data')}`;
      for (const request of [client.listTools(), client.callTool({ name: 'any', arguments: { input: 'hi' } }), client.listPrompts()]) {
        await expect(request).rejects.toThrow(reason);
      }
      await expect(client.listTools()).rejects.toThrow('set DATA_DIR to an absolute path');
      await waitFor(async () => logged.length > 0, 10_000, 'a log message');
      expect(logged[0]).toMatchObject({ level: 'error', data: expect.stringContaining(reason) });
      expect(logged[0]).toMatchObject({ data: expect.stringContaining('set DATA_DIR to an absolute path') });
    } finally {
      await client.close();
      await fs.rm(clientDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('an engine it cannot reach is named to the client the same way, with what failed', async () => {
    const client = new Client({ name: 'desktop', version: '1.0.0' });
    await client.connect(new StdioClientTransport({
      command: process.execPath, args: [BIN, 'mcp'], stderr: 'ignore',
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/gone`, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    }));
    try {
      await expect(client.listTools()).rejects.toThrow(/agent-engine mcp cannot use the engine's database \(from the environment\): .*ECONNREFUSED/);
    } finally {
      await client.close();
    }
  }, 60_000);

  test('run by a person in a terminal without a running engine, it says why and exits 2 at once', async () => {
    await writeEngineState(dataDir, { ...state, pid: await deadPid() });
    // script(1) gives the command a terminal for stdin, as a shell would.
    const child = spawn('script', ['-qec', `${process.execPath} ${BIN} mcp`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
    const code = await new Promise((r) => child.once('close', r));
    expect(code).toBe(2);
    expect(output).toContain(`agent-engine mcp found no running engine in ${dataDir}`);
  }, 60_000);
});
