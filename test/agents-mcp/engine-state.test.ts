import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { insertAgent } from '../../core/db/agents';
import { engineStateFile, readEngineState, removeEngineState, writeEngineState, type EngineState } from '../../core/engine-state';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';

const BIN = path.join(__dirname, '..', '..', 'api', 'cli', 'agent-engine.js');

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

  test('without a running engine it exits 2 saying how to start one', async () => {
    await writeEngineState(dataDir, { ...state, pid: await deadPid() });
    const child = spawn(process.execPath, [BIN, 'mcp'], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const code = await new Promise((r) => child.once('close', r));
    expect(code).toBe(2);
    expect(stderr).toContain(`agent-engine mcp found no running engine in ${dataDir}`);
    expect(stderr).toContain('start one with npm start and the same DATA_DIR, or set DATABASE_URL and TEMPORAL_ADDRESS');
  }, 60_000);
});
