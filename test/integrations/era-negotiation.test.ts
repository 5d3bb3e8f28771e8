import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Integration, NewIntegration } from '../../core/integration';
import { insertAgent } from '../../store/agents';
import { insertIntegration, touchIntegration, updateIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';

const ROOT = path.join(__dirname, '..', '..');
const fixture = (name: string) => path.join(__dirname, '..', 'fixtures', name);
const suffix = () => randomUUID().slice(0, 8);

describe('the negotiated era of a stdio integration on auto', () => {
  let engine: Engine;
  let dir: string;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    dir = fs.mkdtempSync(path.join(testStack().tmpDir, 'spawns-'));
  });
  afterAll(async () => {
    await engine.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function stdioIntegration(server: string, extra: Partial<NewIntegration> = {}) {
    const spawnFile = path.join(dir, `${suffix()}.spawns`);
    const integration = await insertIntegration(engine.db, {
      name: `era-${suffix()}`, ...extra,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', fixture(server)], cwd: ROOT, env: { SPAWN_FILE: spawnFile } },
    });
    const spawns = () => (fs.existsSync(spawnFile) ? fs.readFileSync(spawnFile, 'utf8').trim().split('\n').length : 0);
    return { integration, spawns };
  }
  /** One run that calls `tool`: a new connection when the integration changed since the last one. */
  async function callOnce(integration: Integration, tool: string, args: Record<string, unknown> = {}) {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${integration.name}__${tool}`, arguments: args }] }, { text: '{{tool_results}}' }] },
    });
    const thread = await insertThread(engine.db, agent.id);
    return (await engine.result(await engine.start({ threadId: thread.id, input: 'go' }))).output;
  }
  const verdict = async (id: string) => (await engine.db.query<{ era: string }>('SELECT era FROM integration_protocol WHERE id = $1', [id])).rows[0]?.era;

  test('a 2026 server is probed on its one process, then spawned once per connection with the kept verdict', async () => {
    const { integration, spawns } = await stdioIntegration('modern-mcp-server.ts');
    expect(await callOnce(integration, 'echo', { text: 'one' })).toBe('modern echo: one');
    expect(spawns()).toBe(1);
    expect(await verdict(integration.id)).toBe('2026-07-28');
    for (const n of [2, 3]) {
      await touchIntegration(engine.db, integration.id);
      expect(await callOnce(integration, 'echo', { text: String(n) })).toBe(`modern echo: ${n}`);
      expect(spawns()).toBe(n);
    }
  });

  test('a 2025 server that exits on the probe is started again as a 2025 one, then spawned once per connection until the verdict is stale or the args change', async () => {
    const { integration, spawns } = await stdioIntegration('probe-exiting-server.ts');
    expect(await callOnce(integration, 'hello')).toBe('hello from 2025');
    expect(spawns()).toBe(2);
    expect(await verdict(integration.id)).toBe('2025-11-25');

    await touchIntegration(engine.db, integration.id);
    expect(await callOnce(integration, 'hello')).toBe('hello from 2025');
    expect(spawns()).toBe(3);

    // Past 24 hours a 2025 verdict is probed again.
    await engine.db.query("UPDATE integration_protocol SET probed_at = now() - interval '25 hours' WHERE id = $1", [integration.id]);
    await touchIntegration(engine.db, integration.id);
    expect(await callOnce(integration, 'hello')).toBe('hello from 2025');
    expect(spawns()).toBe(5);

    // Other args are another server: its verdict is not read.
    const t = integration.transport as Extract<Integration['transport'], { type: 'stdio' }>;
    const changed = await updateIntegration(engine.db, integration.id, { transport: { ...t, args: [...t.args!, '--again'] } });
    expect(await callOnce(changed!, 'hello')).toBe('hello from 2025');
    expect(spawns()).toBe(7);
    await touchIntegration(engine.db, integration.id);
    expect(await callOnce(changed!, 'hello')).toBe('hello from 2025');
    expect(spawns()).toBe(8);
  });

  test('pinned to 2025-11-25, a server is never probed: one spawn per connection from the first', async () => {
    const { integration, spawns } = await stdioIntegration('probe-exiting-server.ts', { protocol: '2025-11-25' });
    expect(await callOnce(integration, 'hello')).toBe('hello from 2025');
    expect(spawns()).toBe(1);
    expect(await verdict(integration.id)).toBeUndefined();
  });
});
