import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration, type NewIntegration } from '../../core/integration';
import { insertThread } from '../../store/threads/threads';
import { truncatedText } from '../../core/truncated-text';
import { csvImportedText } from '../../activities/tools/resource';
import { TEXT_RESULT_BYTES } from '../../activities/tools/resource-content';
import { connectIntegration } from '../../mcp-client/connections/connect';
import { claimSpooled, releaseSpooled } from '../../mcp-client/large-content/spool-files';
import { importCsv } from '../../sources/csv/import-csv';
import { bigCsv, bigText } from '../fixtures/resource-fixtures';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/http-mcp-server';
import { startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';
import { logger, startEngine, type Engine } from '../support/engine';
import { ourSpoolFiles } from '../support/spool-files';

/*
 * A resource larger than the transport keeps in memory arrives in a spool file, over stdio and HTTP
 * (JSON and event-stream answers, the older HTTP+SSE transport) and on both protocol eras, and comes
 * out as it did when it was held whole: the same table, the same text, the same refusal.
 */
const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const MODERN = path.join(__dirname, '..', 'fixtures', 'modern-mcp-server.ts');
const ROWS = 40_000;
const CHARS = 9 * 150_000;
const RESOURCE = 'retrieve_mcp_resource';

const spoolFiles = ourSpoolFiles;

describe('large resources arrive through spool files', () => {
  let engine: Engine;
  let http: HttpMcpServer;
  let modern: ModernHttpServer;
  let expectedCsv: { text: string; hash: string };

  const integration = (transport: NewIntegration['transport'], extra: Partial<NewIntegration> = {}) =>
    insertIntegration(engine.db, { name: `big-${randomUUID().slice(0, 8)}`, transport, ...extra });
  const stdio = (file: string, extra: Partial<NewIntegration> = {}) =>
    integration({ type: 'stdio', command: process.execPath, args: ['--import', 'tsx', file], cwd: ROOT }, extra);

  /** One retrieval: the tool result the LLM got, as stored. */
  async function retrieve(on: Integration, resourceUri: string) {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [on.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: RESOURCE, arguments: { integrationId: on.id, resourceUri } }] }, { text: 'done' }] },
    });
    const threadId = (await insertThread(engine.db, agent.id)).id;
    const result = await engine.result(await engine.start({ threadId, input: 'go', agentId: agent.id }));
    const { rows } = await engine.db.query<{ content: string }>(
      "SELECT message->>'content' AS content FROM run_messages WHERE run_id = $1 AND slot = 1 ORDER BY turn", [result.runId]);
    return { threadId, output: rows[0].content };
  }

  const tableHash = async (schemaTable: string) => (await engine.db.query<{ h: string }>(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t.id)) AS h FROM ${schemaTable} t`)).rows[0].h;

  beforeAll(async () => {
    engine = await startEngine('external');
    http = await startHttpMcpServer();
    modern = await startModernHttpServer();
    // The table the same CSV made when it was held whole: imported from the text itself.
    const agent = await insertAgent(engine.db, { name: `agent-${randomUUID()}`, model: { provider: 'scripted', script: [] } });
    const threadId = (await insertThread(engine.db, agent.id)).id;
    const text = bigCsv(ROWS);
    const source = await importCsv(engine.db, { threadId, uri: 'fixture://big/whole.csv', integrationId: null, text, bytes: Buffer.byteLength(text) });
    expect(source.columns).toEqual([
      { name: 'id', type: 'integer' }, { name: 'amount', type: 'numeric' }, { name: 'name', type: 'text' }, { name: 'note', type: 'text' }, { name: 'day', type: 'date' },
    ]);
    expectedCsv = { text: csvImportedText('fixture://big/x.csv', 'x', source.columns, ROWS), hash: await tableHash(`"${source.schemaName}"."${source.tableName}"`) };
  });
  afterAll(async () => {
    await engine.close();
    await http.close();
    await modern.close();
  });

  type Extra = Partial<NewIntegration>;
  const servers: [string, (extra?: Extra) => Promise<Integration>, string][] = [
    ['stdio, 2025 era', (extra) => stdio(FIXTURE, extra), 'fixture'],
    ['stdio, 2026 era', (extra) => stdio(MODERN, extra), 'modern'],
    ['Streamable HTTP with JSON answers', (extra) => integration({ type: 'http', url: http.url.json }, extra), 'fixture'],
    ['Streamable HTTP with event-stream answers', (extra) => integration({ type: 'http', url: http.url.sse }, extra), 'fixture'],
    ['the older HTTP+SSE transport', (extra) => integration({ type: 'http', url: http.url.legacy }, extra), 'fixture'],
    ['Streamable HTTP, 2026 era', (extra) => integration({ type: 'http', url: modern.url }, extra), 'modern'],
  ];

  test.each(servers)('over %s a large CSV is imported as the same table, and a large text returned as before', async (_, make, scheme) => {
    const on = await make();
    const uri = `${scheme}://big/${ROWS}.csv`;
    const { threadId, output } = await retrieve(on, uri);
    expect(output).toBe(expectedCsv.text.replace('fixture://big/x.csv', uri).replace('\nTable: x\n', `\nTable: ${ROWS}\n`));
    const { rows: [source] } = await engine.db.query<{ schema_name: string; table_name: string }>(
      'SELECT schema_name, table_name FROM data_sources WHERE thread_id = $1', [threadId]);
    expect(await tableHash(`"${source.schema_name}"."${source.table_name}"`)).toBe(expectedCsv.hash);

    expect((await retrieve(on, `${scheme}://big-text/${CHARS}`)).output).toBe(truncatedText(bigText(CHARS), TEXT_RESULT_BYTES));
    expect((await retrieve(on, `${scheme}://big-blob/3000000`)).output)
      .toBe(`[binary resource ${scheme}://big-blob/3000000: application/octet-stream, 3000000 bytes; its content is not shown]`);
    expect(spoolFiles()).toEqual([]);
  });

  test.each(servers)('over %s a resource past maxResourceBytes fails with the contract text and leaves no file', async (_, make, scheme) => {
    const on = await make({ maxResourceBytes: 2_000_000 });
    expect((await retrieve(on, `${scheme}://big-text/${CHARS}`)).output).toBe('Resource retrieval failed: resource exceeds 2000000 bytes');
    expect((await retrieve(on, `${scheme}://big-blob/3000000`)).output).toBe('Resource retrieval failed: resource exceeds 2000000 bytes');
    expect(spoolFiles()).toEqual([]);
  });

  test.each(servers)('over %s the SDK gets a token in place of the large content, and its spool file holds the decoded bytes', async (_, make, scheme) => {
    const groupsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'big-resources-groups-'));
    const client = await connectIntegration(await make(), { groupsDir, logger, timeoutMs: 30_000 });
    try {
      const text = bigText(CHARS);
      for (const [uri, expected] of [[`${scheme}://big-text/${CHARS}`, Buffer.from(text)], [`${scheme}://big-blob/3000000`, Buffer.alloc(3_000_000, 7)]] as const) {
        const [content] = (await client.readResource({ uri })).contents as unknown as Record<string, string>[];
        const spool = claimSpooled(content.text ?? content.blob)!;
        expect(spool).toMatchObject({ bytes: expected.length, field: content.text === undefined ? 'blob' : 'text' });
        expect(fs.readFileSync(spool.path).equals(expected)).toBe(true);
        await releaseSpooled(spool);
      }
    } finally {
      await client.close();
      fs.rmSync(groupsDir, { recursive: true, force: true });
    }
    expect(spoolFiles()).toEqual([]);
  });
});
