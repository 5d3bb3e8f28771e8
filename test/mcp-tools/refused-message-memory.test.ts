import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { insertThread } from '../../store/threads/threads';
import { startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const MiB = 1024 * 1024;

/** A full collection, so that what is still held is what something keeps, not what waits for the collector. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('a stdio message over the transport bound', () => {
  let engine: Engine;
  let bounded: Integration;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    // The bound is 2 × 100 MiB + 1 MiB; the line below is 250 MiB.
    bounded = await insertIntegration(engine.db, {
      name: `bounded-${randomUUID().slice(0, 8)}`, maxResourceBytes: 100 * MiB,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
  });
  afterAll(async () => {
    await engine.close();
  });

  const call = async (tool: string, args: Record<string, unknown>) => {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [bounded.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${bounded.name}__${tool}`, arguments: args }] }, { text: '{{tool_results}}' }] },
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    return (await engine.result(runId)).output;
  };

  test('is refused, and the worker lets go of what the refused message held', async () => {
    // The server is up and its first answer read before the measurement starts.
    expect(await call('echo', { text: 'warm' })).toBe('echo: warm');
    collectGarbage();
    const before = process.memoryUsage();

    const output = await call('sized', { bytes: 250 * MiB });
    const bound = 2 * 100 * MiB + MiB;
    const refused = /^MCP tool execution failed: message of (\d+) bytes exceeds the transport bound of (\d+) bytes$/.exec(output ?? '');
    expect(refused).not.toBeNull();
    expect(Number(refused![1])).toBeGreaterThan(250 * MiB);
    expect(Number(refused![2])).toBe(bound);

    // V8 frees the memory of array buffers on a background thread after the collection: give it a moment.
    const held = () => {
      collectGarbage();
      const after = process.memoryUsage();
      return { arrayBuffersMiB: Math.round((after.arrayBuffers - before.arrayBuffers) / MiB), rssMiB: Math.round((after.rss - before.rss) / MiB) };
    };
    // Holding on to the refused message's first part alone would be about 200 MiB.
    await waitFor(async () => held().arrayBuffersMiB < 32 && held().rssMiB < 100, 10_000, 'the refused message to be let go of')
      .catch((err: Error) => Promise.reject(new Error(`${err.message}: still held ${JSON.stringify(held())}`)));
    // The same connection (and server) answers the next call.
    expect(await call('echo', { text: 'after' })).toBe('echo: after');
  });
});
