import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration, type NewIntegration } from '../../core/integration';
import { insertThread } from '../../store/threads/threads';
import { buildApp } from '../../api/app';
import { csvImportedText } from '../../activities/tools/resource';
import { logger, startEngine, type Engine } from '../support/engine';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const MARKER = `--marker=${randomUUID()}`;
const suffix = () => randomUUID().slice(0, 8);
const RESOURCE = 'retrieve_mcp_resource';

const salesColumns = [
  { name: 'id', type: 'integer' }, { name: 'select', type: 'text' }, { name: 'order', type: 'text' }, { name: 'order_2', type: 'text' },
  { name: 'user', type: 'text' }, { name: 'amount', type: 'numeric' }, { name: 'paid', type: 'boolean' }, { name: 'day', type: 'date' },
  { name: 'at', type: 'timestamp' }, { name: 'zip', type: 'text' },
];

describe.each(['embedded', 'external'] as const)('MCP resources in runs on the %s PostgreSQL', (kind) => {
  let engine: Engine;
  let fixture: Integration;

  const integration = (extra: Partial<NewIntegration> = {}, marker = MARKER) => insertIntegration(engine.db, {
    name: `res-${suffix()}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, marker], cwd: ROOT },
    ...extra,
  });

  async function run(integrations: Integration[], script: ScriptStep[], threadId?: string) {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: integrations.map((i) => i.id),
    });
    const thread = threadId ?? (await insertThread(engine.db, agent.id)).id;
    const runId = await engine.start({ threadId: thread, input: 'go', agentId: agent.id });
    return { threadId: thread, result: await engine.result(runId) };
  }
  /** One retrieval, then an answer that repeats the result: the output is what the LLM saw. */
  const retrieveOnce = (on: Integration, args: Record<string, unknown>, threadId?: string) =>
    run([on], [{ toolCalls: [{ name: RESOURCE, arguments: args }] }, { text: '{{tool_results}}' }], threadId);

  beforeAll(async () => {
    engine = await startEngine(kind);
    fixture = await integration();
  });
  afterAll(async () => {
    await engine.close();
  });

  test('a CSV resource named by integration name is imported; the LLM gets table, columns and rows; GET sources lists it', async () => {
    const { threadId, result } = await retrieveOnce(fixture, { integrationId: fixture.name, resourceUri: 'fixture://data/sales.csv' });
    const expected = csvImportedText('fixture://data/sales.csv', 'sales', salesColumns, 3);
    expect(expected).toContain('\nTable: sales\nColumns: id (integer), select (text), order (text), order_2 (text)');
    expect(result.output).toBe(expected);
    expect(result.toolCalls[0]).toMatchObject({ type: 'mcp_resource', integrationId: fixture.id, status: 'ok' });

    const app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger });
    try {
      const res = await app.inject({ method: 'GET', url: `/v1/threads/${threadId}/sources` });
      expect(res.statusCode).toBe(200);
      const { sources } = res.json() as { sources: Record<string, unknown>[] };
      expect(sources).toEqual([{
        id: expect.stringMatching(/^src_/), uri: 'fixture://data/sales.csv', integrationId: fixture.id, tableName: 'sales',
        columns: salesColumns, rowCount: 3, bytes: expect.any(Number), createdAt: expect.any(String),
      }]);
      expect((await app.inject({ method: 'GET', url: '/v1/threads/thr_nope/sources' })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });

  test('missing parameters get the exact contract texts; a bad CSV names its line and imports nothing', async () => {
    const { threadId, result } = await run([fixture], [
      { toolCalls: [
        { name: RESOURCE, arguments: { resourceUri: 'fixture://data/sales.csv' } },
        { name: RESOURCE, arguments: { integrationId: fixture.id } },
        { name: RESOURCE, arguments: { integrationId: fixture.id, resourceUri: 'fixture://csv/{case}', parameters: { case: 'ragged' } } },
      ] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.output).toBe([
      'Resource retrieval failed: integrationId parameter is required',
      'Resource retrieval failed: resourceUri parameter is required',
      'Resource retrieval failed: invalid CSV: line 3 has 2 fields, but the header has 3',
    ].join('\n'));
    expect(result.status).toBe('completed');
    const { rows } = await engine.db.query('SELECT 1 FROM data_sources WHERE thread_id = $1', [threadId]);
    expect(rows).toHaveLength(0);
  });
});

describe('MCP resource contents and limits', () => {
  let engine: Engine;
  let fixture: Integration;
  const integration = (extra: Partial<NewIntegration> = {}, marker = MARKER) => insertIntegration(engine.db, {
    name: `res-${suffix()}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, marker], cwd: ROOT },
    ...extra,
  });
  async function outputs(on: Integration, calls: Record<string, unknown>[]) {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [on.id],
      model: { provider: 'scripted', script: [...calls.map((args) => ({ toolCalls: [{ name: RESOURCE, arguments: args }] })), { text: 'done' }] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const result = await engine.result(await engine.start({ threadId: thread.id, input: 'go' }));
    expect(result.status).toBe('completed');
    const { rows } = await engine.db.query<{ content: string }>(
      "SELECT message->>'content' AS content FROM run_messages WHERE run_id = $1 AND slot = 1 ORDER BY turn", [result.runId]);
    return rows.map((r) => r.content);
  }

  beforeAll(async () => {
    engine = await startEngine('embedded');
    fixture = await integration();
  });
  afterAll(async () => {
    await engine.close();
  });

  test('text is returned, long text is cut with the note, a blob is described, a template is filled, an unknown URI reports its error', async () => {
    const got = await outputs(fixture, [
      { integrationId: fixture.id, resourceUri: 'fixture://readme' },
      { integrationId: fixture.id, resourceUri: 'fixture://docs/big.txt' },
      { integrationId: fixture.id, resourceUri: 'fixture://images/logo.png' },
      { integrationId: fixture.id, resourceUri: 'fixture://sized/{bytes}', parameters: { bytes: 12 } },
      { integrationId: fixture.id, resourceUri: 'fixture://nowhere' },
      { integrationId: 'not-mine', resourceUri: 'fixture://readme' },
    ]);
    expect(got[0]).toBe('fixture readme');
    expect(got[1]).toBe(`${'é'.repeat(51_200)}\n[truncated: showing 102400 of 200000 bytes]`);
    expect(got[2]).toBe('[binary resource fixture://images/logo.png: image/png, 3000 bytes; its content is not shown]');
    expect(got[3]).toBe('z'.repeat(12));
    expect(got[4]).toMatch(/^Resource retrieval failed: .*fixture:\/\/nowhere/);
    expect(got[5]).toBe('Resource retrieval failed: integration not-mine is not available to this agent');
  });

  test('a sniffed CSV and a Windows-1252 CSV blob are imported', async () => {
    const got = await outputs(fixture, [
      { integrationId: fixture.id, resourceUri: 'fixture://data/plain-table' },
      { integrationId: fixture.id, resourceUri: 'fixture://data/latin1.csv' },
    ]);
    expect(got[0]).toBe(csvImportedText('fixture://data/plain-table', 'plain_table', [{ name: 'city', type: 'text' }, { name: 'population', type: 'integer' }], 2));
    expect(got[1]).toContain('\nTable: latin1\n');
    const { rows } = await engine.db.query("SELECT schema_name FROM data_sources WHERE uri = 'fixture://data/latin1.csv'");
    const city = await engine.db.query(`SELECT city FROM ${rows[0].schema_name}.latin1`);
    expect(city.rows).toEqual([{ city: 'naïve' }]);
  });

  test('over maxResourceBytes, measured or cut at the transport: the exact error, and the server connection stays up', async () => {
    const small = await integration({ maxResourceBytes: 1000 });
    const pid = { integrationId: small.id, resourceUri: 'fixture://pid' };
    const got = await outputs(small, [
      pid,
      { integrationId: small.id, resourceUri: 'fixture://sized/{bytes}', parameters: { bytes: 5000 } },
      { integrationId: small.id, resourceUri: 'fixture://sized/{bytes}', parameters: { bytes: 3_000_000 } },
      pid,
    ]);
    expect(got.slice(1, 3)).toEqual(['Resource retrieval failed: resource exceeds 1000 bytes', 'Resource retrieval failed: resource exceeds 1000 bytes']);
    // The same server process answered before and after both refusals: neither dropped the connection.
    expect(got[0]).toMatch(/^pid \d+$/);
    expect(got[3]).toBe(got[0]);
  });
});
