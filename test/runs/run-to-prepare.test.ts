import { randomUUID } from 'node:crypto';
import { insertAgent } from '../../store/agents';
import { findIntegration, insertIntegration } from '../../store/integrations/integrations';
import { insertRunOnNewThread, runToPrepare } from '../../store/runs/lifecycle';
import { newId } from '../../platform/ids';
import { startEngine, type Engine } from '../support/engine';

/**
 * Preparing a run reads its agent's integrations in the statement that reads the run: they must
 * come out as the integrations' own read gives them (secrets unsealed, every field), in the
 * agent's order, without those deleted since the agent named them.
 */
describe('runToPrepare', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await startEngine('external', { worker: false });
  });
  afterAll(async () => {
    await engine.close();
  });

  test("reads the agent's integrations as findIntegration does, in the agent's order, leaving out deleted ones", async () => {
    const { db } = engine;
    const make = (tag: string, extra: object = {}) => insertIntegration(db, {
      name: `prep_${tag}_${randomUUID().slice(0, 8)}`, transport: { type: 'stdio', command: 'node', args: ['x.js'], env: { TOKEN: `secret-${tag}` } }, ...extra,
    });
    const first = await make('a', { approval: { default: 'always', timeout: '90s' }, disabledPrompts: ['p'] });
    const second = await make('b', { enabled: false, taskQueue: 'elsewhere' });
    const gone = await make('c');
    const agent = await insertAgent(db, {
      name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [{ text: 'hi' }] }, integrationIds: [second.id, gone.id, first.id],
    });
    await db.query('DELETE FROM integrations WHERE id = $1', [gone.id]);
    const runId = newId('run');
    await insertRunOnNewThread(db, { runId, threadId: newId('thr'), agentRef: agent.id, input: 'go' });

    const read = await runToPrepare(db, runId, []);
    expect(read.integrations).toEqual([await findIntegration(db, second.id), await findIntegration(db, first.id)]);
    expect(read.integrations.map((i) => i.transport.type === 'stdio' && i.transport.env?.TOKEN)).toEqual(['secret-b', 'secret-a']);
  });

  test('a run without integrations reads none, and a run that does not exist reads nothing', async () => {
    const { db } = engine;
    const agent = await insertAgent(db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [{ text: 'hi' }] } });
    const runId = newId('run');
    await insertRunOnNewThread(db, { runId, threadId: newId('thr'), agentRef: agent.id, input: 'go' });
    expect((await runToPrepare(db, runId, [])).integrations).toEqual([]);
    expect(await runToPrepare(db, newId('run'), [])).toMatchObject({ integrations: [] });
    expect((await runToPrepare(db, newId('run'), [])).run).toBeUndefined();
  });
});
