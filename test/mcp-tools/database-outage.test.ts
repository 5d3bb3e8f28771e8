import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { proxyDatabase, type TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');

describe('a database outage while a tool runs', () => {
  let engine: Engine;
  let proxy: TcpProxy;

  beforeAll(async () => {
    const proxied = await proxyDatabase(testStack().databases.embedded);
    proxy = proxied.proxy;
    engine = await startEngine('embedded', { workerDatabaseUrl: proxied.url });
  });
  afterAll(async () => {
    await engine.close();
    await proxy.close();
  });

  test('the tool runs once, its result waits for the database, and the LLM gets it', async () => {
    const countFile = path.join(testStack().tmpDir, `outage-count-${randomUUID()}`);
    const fixture = await insertIntegration(engine.db, {
      name: `outage-${randomUUID().slice(0, 8)}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, env: { COUNT_FILE: countFile } },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fixture.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fixture.name}__count_slowly`, arguments: { ms: 3000 } }] }, { text: '{{tool_results}}' }] },
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });

    // The worker's database goes away while the (non-idempotent) tool runs, and comes back after it answered.
    await waitFor(async () => fs.existsSync(countFile), 60_000, 'the tool to start');
    proxy.cut();
    await new Promise((r) => setTimeout(r, 6_000));
    expect(fs.readFileSync(countFile, 'utf8')).toBe('x');
    proxy.restore();

    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'counted slowly: 1' });
    expect(result.toolCalls[0]).toMatchObject({ status: 'ok', result: 'counted slowly: 1' });
    expect(fs.readFileSync(countFile, 'utf8')).toBe('x');
  }, 120_000);
});
