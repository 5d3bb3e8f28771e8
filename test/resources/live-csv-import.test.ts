import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { insertThread } from '../../store/threads/threads';
import { importCsv, threadSchemaName } from '../../sources/csv/import-csv';
import { claimSpooled, releaseSpooled } from '../../mcp-client/large-content/spool-files';
import { bigCsv } from '../fixtures/resource-fixtures';
import { startEngine, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';
import { ourSpoolFiles } from '../support/spool-files';

/*
 * A large CSV resource goes to PostgreSQL while the server still sends it, and becomes a table
 * only once its answer has arrived whole and is the answer to this call.
 */
const ROOT = path.join(__dirname, '..', '..');
const SERVER = path.join(__dirname, '..', 'fixtures', 'trickling-csv-server.ts');
const ROWS = 60_000;
const URI = 'trickle://data/rows.csv';
const spoolFiles = ourSpoolFiles;

describe('a large CSV imported as it arrives', () => {
  let engine: Engine;
  let dir: string;

  beforeAll(async () => {
    engine = await startEngine('external');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'live-csv-'));
  });
  afterAll(async () => {
    await engine.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a run that retrieves the trickling CSV; the server holds the answer's end until `release`. */
  async function retrieval(env: Record<string, string> = {}, toolTimeoutMs = 60_000) {
    const holdFile = path.join(dir, randomUUID());
    const on = await insertIntegration(engine.db, {
      name: `trickle-${randomUUID().slice(0, 8)}`, protocol: '2025-11-25', toolTimeoutMs,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', SERVER], cwd: ROOT, env: { CSV_ROWS: String(ROWS), HOLD_FILE: holdFile, ...env } },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [on.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'retrieve_mcp_resource', arguments: { integrationId: on.id, resourceUri: URI } }] }, { text: 'done' }] },
    });
    const threadId = (await insertThread(engine.db, agent.id)).id;
    const runId = await engine.start({ threadId, input: 'go', agentId: agent.id });
    const toolResult = async () => (await engine.db.query<{ content: string }>(
      "SELECT message->>'content' AS content FROM run_messages WHERE run_id = $1 AND slot = 1", [runId])).rows[0]?.content;
    return { threadId, runId, release: () => fs.writeFileSync(holdFile, ''), toolResult };
  }

  /** Rows COPY has taken into a table of the thread's schema so far, as PostgreSQL reports it (the table itself is not yet visible). */
  const copiedRows = async (threadId: string) => Number((await engine.db.query<{ n: string }>(
    `SELECT coalesce(sum(p.tuples_processed), 0) AS n FROM pg_stat_progress_copy p JOIN pg_stat_activity a ON a.pid = p.pid
     WHERE a.query LIKE $1`, [`COPY "${threadSchemaName(threadId)}".%`])).rows[0].n);
  const tablesOf = async (threadId: string) => (await engine.db.query<{ t: string }>(
    'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1', [threadSchemaName(threadId)])).rows.map((r) => r.t);
  const tableHash = async (table: string) => (await engine.db.query<{ h: string }>(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t.id)) AS h FROM ${table} t`)).rows[0].h;

  test('rows reach PostgreSQL before the server has finished sending, and the table is the one the whole text makes', async () => {
    const call = await retrieval();
    await waitFor(async () => (await copiedRows(call.threadId)) > 0, 60_000, 'COPY to take rows while the answer is still on its way');
    // Held: nothing is visible yet.
    expect(await engine.db.query('SELECT 1 FROM data_sources WHERE thread_id = $1', [call.threadId])).toMatchObject({ rowCount: 0 });
    call.release();
    const result = await engine.result(call.runId);
    expect(result.status).toBe('completed');
    expect(await call.toolResult()).toMatch(/^CSV resource imported as data source: trickle:\/\/data\/rows\.csv\./);
    const { rows: [source] } = await engine.db.query<{ schema_name: string; table_name: string; row_count: string }>(
      'SELECT schema_name, table_name, row_count FROM data_sources WHERE thread_id = $1', [call.threadId]);
    expect(Number(source.row_count)).toBe(ROWS);

    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [] } });
    const wholeThread = (await insertThread(engine.db, agent.id)).id;
    const text = bigCsv(ROWS, { steady: true });
    const whole = await importCsv(engine.db, { threadId: wholeThread, uri: URI, integrationId: null, text, bytes: Buffer.byteLength(text) });
    expect(await tableHash(`"${source.schema_name}"."${source.table_name}"`)).toBe(await tableHash(`"${whole.schemaName}"."${whole.tableName}"`));
    expect(await tablesOf(call.threadId)).toEqual([source.table_name]);
  });

  test('an answer that turns out to be no answer to this call (another id) loads nothing: the rows sent are rolled back', async () => {
    const call = await retrieval({ ANSWER_ID: 'wrong' }, 8_000);
    await waitFor(async () => (await copiedRows(call.threadId)) > 0, 60_000, 'COPY to take rows while the answer is still on its way');
    call.release();
    const result = await engine.result(call.runId);
    expect(result.status).toBe('completed');
    expect(await call.toolResult()).toBe('Resource retrieval failed: timed out after 8000 ms');
    expect(await engine.db.query('SELECT 1 FROM data_sources WHERE thread_id = $1', [call.threadId])).toMatchObject({ rowCount: 0 });
    expect(await tablesOf(call.threadId)).toEqual([]);
    expect(await copiedRows(call.threadId)).toBe(0);
    // The answer nobody asked for left its spool unclaimed, for the transport to remove within a minute: removed now,
    // so that the next test file of this process finds none.
    const unclaimed = spoolFiles().map((file) => claimSpooled(file.replace(/\.txt$/, '')));
    expect(unclaimed).toHaveLength(1);
    await releaseSpooled(unclaimed[0]!);
    expect(spoolFiles()).toEqual([]);
  });

  test('two such retrievals at once in one worker, which cannot tell their spools apart as they arrive, both give the whole table', async () => {
    const calls = await Promise.all([retrieval(), retrieval()]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    for (const call of calls) call.release();
    for (const call of calls) {
      expect((await engine.result(call.runId)).status).toBe('completed');
      expect(await call.toolResult()).toMatch(/^CSV resource imported as data source: trickle:\/\/data\/rows\.csv\./);
      const { rows: [source] } = await engine.db.query<{ schema_name: string; table_name: string; row_count: string }>(
        'SELECT schema_name, table_name, row_count FROM data_sources WHERE thread_id = $1', [call.threadId]);
      expect(Number(source.row_count)).toBe(ROWS);
      expect(await tablesOf(call.threadId)).toEqual([source.table_name]);
    }
  });
});
