import { importCsv, threadSchemaName } from '../../sources/csv/import-csv';
import { dropThreadRole } from '../../sources/query/thread-role';
import { toolResultText } from '../../core/tool-texts';
import { startEngine, type Engine } from '../support/engine';

const SALES = 'region,amount\nnorth,10.5\nsouth,-3\n';

describe.each(['embedded', 'external'] as const)('source_query in a run on the %s PostgreSQL', (kind) => {
  let engine: Engine;
  const threads: string[] = [];

  beforeAll(async () => {
    engine = await startEngine(kind);
  });
  afterAll(async () => {
    for (const id of threads) await dropThreadRole(engine.db, id);
    await engine.close();
  });

  test('the LLM reads imported data as a table; a refused statement comes back as text and the run completes', async () => {
    const { threadId } = await engine.scriptedThread([
      {
        toolCalls: [
          { name: 'source_query', arguments: { sql: 'SELECT region, amount FROM sales ORDER BY region' } },
          { name: 'source_query', arguments: { sql: 'SELECT 1; COMMIT; DROP TABLE sales' } },
          { name: 'source_query', arguments: { sql: 'SELECT nope FROM sales' } },
          { name: 'source_query', arguments: { limit: 3 } },
        ],
      },
      { text: '{{tool_results}}' },
    ]);
    threads.push(threadId);
    await importCsv(engine.db, { threadId, uri: 'fixture://data/sales.csv', integrationId: null, text: SALES, bytes: SALES.length });

    const result = await engine.result(await engine.start({ threadId, input: 'What are the sales?' }));
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', turns: 2 });
    expect(result.output).toBe([
      'region | amount\nnorth | 10.5\nsouth | -3\n(2 rows)',
      toolResultText.sourceQueryFailed('refused: exactly one statement is allowed, got 3 (SELECT, transaction control, DROP)'),
      toolResultText.sourceQueryFailed('column "nope" does not exist'),
      toolResultText.sourceQueryFailed('sql parameter is required'),
    ].join('\n'));
    expect(result.toolCalls.map((c) => [c.type, c.status])).toEqual([
      ['source_query', 'ok'], ['source_query', 'error'], ['source_query', 'error'], ['source_query', 'error'],
    ]);
    const { rows } = await engine.db.query(`SELECT count(*)::int AS n FROM ${threadSchemaName(threadId)}.sales`);
    expect(rows[0].n).toBe(2);
  });

  test('without data sources or integrations the tool is not offered', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'source_query', arguments: { sql: 'SELECT 1' } }] },
      { text: '{{tool_results}}' },
    ]);
    const result = await engine.result(await engine.start({ threadId, input: 'go' }));
    expect(result.output).toBe(toolResultText.unknownTool('source_query'));
    expect(result.toolCalls).toMatchObject([{ type: 'unknown', status: 'error' }]);
  });
});
