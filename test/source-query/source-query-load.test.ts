import { importCsv } from '../../sources/csv/import-csv';
import { runSourceQuery } from '../../sources/query/source-query';
import { dropThreadRole } from '../../sources/query/thread-role';
import { startEngine, type Engine } from '../support/engine';

const DATA = 'n\n1\n2\n3\n';
/** How long each slow query sleeps. */
const SLOW_S = 30;

describe('source queries never starve the worker', () => {
  let engine: Engine;
  const threads: string[] = [];

  beforeAll(async () => {
    // Slow queries of 30 s (past the default 15 s statement timeout): starving is then unmistakable.
    engine = await startEngine('embedded', { sourceQuery: { timeoutMs: SLOW_S * 1000 + 10_000 } });
  });
  afterAll(async () => {
    for (const id of threads) await dropThreadRole(engine.db, id);
    await engine.close();
  });

  async function threadWithData(script: Parameters<Engine['scriptedThread']>[0]) {
    const { threadId } = await engine.scriptedThread(script);
    threads.push(threadId);
    await importCsv(engine.db, { threadId, uri: 'fixture://t.csv', integrationId: null, text: DATA, bytes: DATA.length });
    return threadId;
  }

  test('40 slow queries in one turn: 4 run, the rest are refused after 5 s, and another run on the worker stays quick', async () => {
    const slow = await threadWithData([
      { toolCalls: Array.from({ length: 40 }, () => ({ name: 'source_query', arguments: { sql: `select pg_sleep(${SLOW_S}) from t limit 1` } })) },
      { text: 'done' },
    ]);
    const quick = await threadWithData([{ toolCalls: [{ name: 'source_query', arguments: { sql: 'select count(*) from t' } }] }, { text: '{{tool_results}}' }]);
    const slowRun = await engine.start({ threadId: slow, input: 'slow' });
    // The slow run ends before the next test, even when a check here fails: its queries hold the slots.
    const slowEnded = engine.result(slowRun);
    slowEnded.catch(() => undefined);
    try {
      // Let the slow turn take its slots first.
      await new Promise((r) => setTimeout(r, 3_000));
      const started = Date.now();
      const quickResult = await engine.result(await engine.start({ threadId: quick, input: 'quick' }));
      // Its own query waits for a slot at most 5 s; everything else it does is untouched by the slow turn.
      // Starved, it would end only once a slow query frees a slot: 30 s after they began, 27 s after it
      // started. The bound leaves the run's own steps 15 s on a loaded machine, and is still 7 s short of that.
      expect(quickResult.status).toBe('completed');
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await slowEnded.catch(() => undefined);
    }

    const slowResult = await slowEnded;
    const refused = slowResult.toolCalls.filter((c) => c.status === 'error');
    expect(slowResult.toolCalls.filter((c) => c.status === 'ok').length).toBeGreaterThanOrEqual(4);
    expect(refused.length).toBeGreaterThan(20);
    expect(refused[0].result).toMatch(/^Source query failed: the worker is running 4 source queries already and none ended within 5 s/);
  }, 120_000);

  test('a result of large values is fetched within the byte budget, not whole', async () => {
    const threadId = await threadWithData([]);
    const before = process.memoryUsage().rss;
    // 1,000 rows of 50 values just under the 16 KiB budget each: 800 MB a query if fetched whole.
    const columns = Array.from({ length: 50 }, (_, i) => `repeat('x', 16000) as c${i}`).join(', ');
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => runSourceQuery(engine.db, threadId, {
      sql: `select ${columns} from generate_series(1, 1000) limit 1000`, limit: 1000,
    })));
    for (const o of outcomes) {
      expect(o.ok).toBe(true);
      expect(o.ok && o.text).toMatch(/more rows/);
    }
    // Four queries of 800 MB each when fetched whole; within the budget, one row each.
    expect(process.memoryUsage().rss - before).toBeLessThan(300 * 1024 * 1024);
  }, 90_000);
});
