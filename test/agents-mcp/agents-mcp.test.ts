import { randomUUID } from 'node:crypto';
import { mkdir, rm, unlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Transport, Progress } from '@modelcontextprotocol/client';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { parseChatmd } from '../../store/agent-files/parse-chatmd';
import { syncAgentFiles, type SyncReport } from '../../store/agent-files/sync';
import { startAgentFileSync } from '../../store/agent-files/watch-agent-files';
import { insertAgent } from '../../store/agents';
import { findRunResult } from '../../store/runs/results';
import { insertThread } from '../../store/threads/threads';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { mcpStdioTransport } from '../support/cli';
import { waitFor } from '../support/wait';

const API_KEY = 'mcp-test-key-0123456789';
const suffix = randomUUID().slice(0, 8);
const SUMMARISE = `summarise_${suffix}`;
const SLOW = `slow_${suffix}`;

const summariseFile = `<!-- a test agent -->
<config>
{"description": "Summarises text", "model": {"provider": "scripted", "script": [
  {"toolCalls": [{"name": "no_such_tool", "arguments": {}}]},
  {"text": "summary done"}
]}}
</config>
<system>
You summarise.
</system>
<user>Summarise this: {{input}}</user>
`;
const slowFile = `<config>{"model": {"provider": "scripted", "script": [{"text": "too late", "delayMs": 60000}]}}</config>
<system>You are slow.</system>
`;

let engine: Engine;
let app: FastifyInstance;
let mcpUrl: URL;
let dir: string;

beforeAll(async () => {
  engine = await startEngine('embedded');
  dir = path.join(testStack().tmpDir, `agents-${suffix}`);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${SUMMARISE}.chatmd`), summariseFile);
  await writeFile(path.join(dir, `${SLOW}.chatmd`), slowFile);
  const report = await syncAgentFiles(engine.db, dir);
  expect(report.errors).toEqual([]);
  app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, apiKey: API_KEY, rateLimitPerMinute: 0 });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = new URL(`${address}/mcp`);
}, 120_000);

afterAll(async () => {
  await app?.close();
  await engine?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('agent files', () => {
  it('a bad file is reported with its file and line, and the other agents are still synced', async () => {
    const bad = path.join(dir, `broken_${suffix}.chatmd`);
    await writeFile(bad, '<config>{"model": {"provider": "scripted", "script": []}}</config>\n\n<sytem>typo</sytem>\n');
    try {
      const report = await syncAgentFiles(engine.db, dir);
      expect(report.errors.map((e) => e.message)).toEqual([`${bad}:3: unknown block <sytem>; use <system>, <user>, <assistant> or <config>`]);
      expect([...report.unchanged].sort()).toEqual([SLOW, SUMMARISE].sort());
    } finally {
      await unlink(bad);
    }
  });

  it('a NUL byte, or a NUL escaped in <config>, is a bad file like any other; the rest still sync', async () => {
    const nulByte = path.join(dir, `nul_byte_${suffix}.chatmd`);
    const nulEscape = path.join(dir, `nul_escape_${suffix}.chatmd`);
    const typo = path.join(dir, `typo_${suffix}.chatmd`);
    await writeFile(nulByte, '<config>{"model": {"provider": "scripted", "script": []}}</config>\n<system>\nzero \u0000 here</system>\n');
    await writeFile(nulEscape, '<config>\n{"description": "a\\u0000b", "model": {"provider": "scripted", "script": []}}</config>\n');
    await writeFile(typo, '<config>{"model": {"provider": "scripted", "script": []}}</config>\n<sytem>typo</sytem>\n');
    try {
      const report = await syncAgentFiles(engine.db, dir);
      expect(report.errors.map((e) => e.message).sort()).toEqual([
        `${nulByte}:3: the file contains a NUL byte; agent files are UTF-8 text`,
        `${nulEscape}:1: invalid <config>: description contains a NUL character (\\u0000), which cannot be stored`,
        `${typo}:2: unknown block <sytem>; use <system>, <user>, <assistant> or <config>`,
      ].sort());
      expect([...report.unchanged].sort()).toEqual([SLOW, SUMMARISE].sort());
    } finally {
      await Promise.all([nulByte, nulEscape, typo].map((f) => unlink(f)));
    }
  });

  it('an API-defined agent with the same name is a conflict and is not overwritten', async () => {
    const name = `taken_${suffix}`;
    const apiAgent = await insertAgent(engine.db, { name, instructions: 'mine', model: { provider: 'scripted', script: [] } });
    const file = path.join(dir, `${name}.chatmd`);
    await writeFile(file, '<config>{"model": {"provider": "scripted", "script": []}}</config><system>theirs</system>');
    try {
      const report = await syncAgentFiles(engine.db, dir);
      expect(report.errors.map((e) => e.message)).toEqual([`${file}:1: an agent named "${name}" is already defined through the API; this file is skipped`]);
      const { rows } = await engine.db.query('SELECT instructions, source_file FROM agents WHERE id = $1', [apiAgent.id]);
      expect(rows[0]).toEqual({ instructions: 'mine', source_file: null });
    } finally {
      await unlink(file);
    }
  });

  it('a <config> that is not JSON is reported at the line of the mistake', () => {
    expect(() => parseChatmd('a.chatmd', '<system>hi</system>\n<config>\n{"model":\n  {"provider": "scripted",, "script": []}}\n</config>'))
      .toThrow(/^a\.chatmd:4: <config> is not valid JSON/);
  });

  it('"mcpTasks": false in <config> keeps the agent from running as an MCP task; removing it is a change', async () => {
    const name = `no_tasks_${suffix}`;
    const file = path.join(dir, `${name}.chatmd`);
    const mcpTasks = async () => (await engine.db.query('SELECT mcp_tasks FROM agents WHERE name = $1', [name])).rows[0]?.mcp_tasks;
    try {
      await writeFile(file, '<config>{"mcpTasks": false, "model": {"provider": "scripted", "script": []}}</config>');
      expect((await syncAgentFiles(engine.db, dir)).changed).toContain(name);
      expect(await mcpTasks()).toBe(false);
      await writeFile(file, '<config>{"model": {"provider": "scripted", "script": []}}</config>');
      expect((await syncAgentFiles(engine.db, dir)).changed).toContain(name);
      expect(await mcpTasks()).toBe(true);
      expect(() => parseChatmd('b.chatmd', '<config>{"mcpTasks": "no", "model": {"provider": "scripted", "script": []}}</config>')).toThrow(/^b\.chatmd:1: .*mcpTasks/);
    } finally {
      await unlink(file);
      await syncAgentFiles(engine.db, dir);
    }
  });

  it('a file written while the sync watches is synced without a restart', async () => {
    const name = `watched_${suffix}`;
    const reports: SyncReport[] = [];
    const sync = await startAgentFileSync({ db: engine.db, dir, logger, debounceMs: 50, onSync: (r) => reports.push(r) });
    try {
      await writeFile(path.join(dir, `${name}.chatmd`), '<config>{"description": "watched", "model": {"provider": "scripted", "script": []}}</config>');
      await waitFor(async () => reports.some((r) => r.changed.includes(name)), 30_000, 'the watched file synced');
      const { rows } = await engine.db.query('SELECT description FROM agents WHERE name = $1', [name]);
      expect(rows).toEqual([{ description: 'watched' }]);
    } finally {
      sync.close();
      await unlink(path.join(dir, `${name}.chatmd`));
      await syncAgentFiles(engine.db, dir);
    }
  });

  it('a deleted file removes its agent', async () => {
    const name = `gone_${suffix}`;
    const file = path.join(dir, `${name}.chatmd`);
    await writeFile(file, '<config>{"model": {"provider": "scripted", "script": []}}</config>');
    expect((await syncAgentFiles(engine.db, dir)).changed).toEqual([name]);
    await unlink(file);
    expect((await syncAgentFiles(engine.db, dir)).removed).toEqual([name]);
    expect((await engine.db.query('SELECT 1 FROM agents WHERE name = $1', [name])).rowCount).toBe(0);
  });
});

async function cancelledRunOf(agentName: string): Promise<string> {
  let runId: string | undefined;
  await waitFor(async () => {
    const { rows } = await engine.db.query<{ id: string }>(
      'SELECT r.id FROM runs r JOIN agents a ON a.id = r.agent_id WHERE a.name = $1 ORDER BY r.created_at DESC LIMIT 1', [agentName]);
    runId = rows[0]?.id;
    return Boolean(runId && (await findRunResult(engine.db, runId))?.status === 'cancelled');
  }, 60_000, `a cancelled run of ${agentName}`);
  return runId!;
}

const transports: Record<string, () => Transport> = {
  'Streamable HTTP': () => new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { authorization: `Bearer ${API_KEY}` } } }),
  stdio: () => mcpStdioTransport(engine.taskQueue),
};

/** The 2025 era is a client's default; a 2026 client pins its revision (docs/mcp-server.md#protocol-eras). */
const eras = { '2025-11-25': 'legacy', '2026-07-28': 'modern' } as const;
const cases = Object.keys(transports).flatMap((kind) => Object.keys(eras).map((era) => [kind, era] as [string, keyof typeof eras]));

describe.each(cases)('agents as an MCP server over %s, protocol %s', (kind, era) => {
  let client: Client;
  beforeAll(async () => {
    client = new Client({ name: 'test', version: '1.0.0' }, eras[era] === 'modern' ? { versionNegotiation: { mode: { pin: era } } } : {});
    await client.connect(transports[kind]());
  }, 60_000);
  afterAll(async () => client?.close());

  it('speaks the era the client asked for', () => {
    expect(client.getProtocolEra()).toBe(eras[era]);
  });

  it('lists every agent as a tool with {input} required, described by the agent', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === SUMMARISE);
    expect(tool?.description).toBe('Summarises text');
    expect(tool?.inputSchema.required).toEqual(['input']);
    expect(tools.map((t) => t.name)).toContain(SLOW);
  });

  it('gets an agent\'s template as a prompt, the system instructions first as a labelled user message', async () => {
    const prompt = await client.getPrompt({ name: SUMMARISE, arguments: { input: 'a long text' } });
    expect(prompt.messages).toEqual([
      { role: 'user', content: { type: 'text', text: '[System instructions]\nYou summarise.' } },
      { role: 'user', content: { type: 'text', text: 'Summarise this: a long text' } },
    ]);
  });

  it('an unknown prompt is an InvalidParams error whose text carries no code', async () => {
    await expect(client.getPrompt({ name: `nope_${suffix}` })).rejects.toMatchObject({
      code: -32602, message: `Unknown prompt: nope_${suffix}`,
    });
  });

  it('calls an agent: a durable run, progress per turn and tool call, and the answer as text', async () => {
    // The SDK client handles a notification a microtask after the line that carried it, but a
    // response at once: when the final progress and the result arrive in one read, it drops that
    // progress as "unknown token". Record every progress notification here instead; onprogress is
    // still given so that the request carries a progress token.
    const progress: Progress[] = [];
    client.setNotificationHandler('notifications/progress', (n) => {
      const { progressToken: _token, ...rest } = n.params;
      progress.push(rest);
    });
    const result = await client.callTool({ name: SUMMARISE, arguments: { input: 'hello' } }, {
      onprogress: () => undefined, timeout: 120_000,
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'summary done' }]);
    const messages = progress.map((p) => p.message);
    expect(messages[0]).toBe('Starting agent');
    expect(messages).toEqual(expect.arrayContaining(['Turn 1', 'Calling no_such_tool', 'Turn 2']));
    expect(messages.at(-1)).toBe('Completed');
    expect(progress.at(-1)?.progress).toBe(1);
    const values = progress.map((p) => p.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    const runId = (result._meta as { runId: string }).runId;
    expect((await findRunResult(engine.db, runId))?.status).toBe('completed');
  }, 120_000);

  it('progress messages carry the model\'s words as they come, at most 4 a second, the values rising to 1', async () => {
    const words = 'Streaming words reach the client while the model writes them, piece by piece.';
    const name = `talker_${randomUUID().slice(0, 8)}`;
    await insertAgent(engine.db, { name, model: { provider: 'scripted', script: [{ text: words, chunks: 10, delayMs: 2_000 }] } as never });
    const progress: Progress[] = [];
    client.setNotificationHandler('notifications/progress', (n) => {
      const { progressToken: _token, ...rest } = n.params;
      progress.push(rest);
    });
    const started = Date.now();
    const result = await client.callTool({ name, arguments: { input: 'go' } }, { onprogress: () => undefined, timeout: 120_000 });
    const elapsed = Date.now() - started;
    expect(result.content).toEqual([{ type: 'text', text: words }]);
    const partial = progress.map((p) => p.message ?? '').filter((m) => m.length > 0 && m.length < words.length && words.startsWith(m));
    expect(partial.length).toBeGreaterThanOrEqual(2);
    expect(partial).toEqual([...partial].sort((a, b) => a.length - b.length));
    const worded = progress.filter((p) => words.startsWith(p.message ?? '\0'));
    expect(worded.length).toBeLessThanOrEqual(elapsed / 250 + 2);
    const values = progress.map((p) => p.progress);
    expect(new Set(values).size).toBe(values.length);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(values.slice(0, -1).every((v) => v < 1)).toBe(true);
    expect(values.at(-1)).toBe(1);
  }, 120_000);

  it('a call with the threadId of another agent\'s thread says so: the answer notes whose thread it is, _meta names both agents', async () => {
    const owner = await insertAgent(engine.db, { name: `owner_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'mine' }] } });
    const thread = await insertThread(engine.db, owner.id);
    const summarise = (await engine.db.query<{ id: string }>('SELECT id FROM agents WHERE name = $1', [SUMMARISE])).rows[0].id;
    const result = await client.callTool({ name: SUMMARISE, arguments: { input: 'hello', threadId: thread.id } }, { timeout: 120_000 });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([
      { type: 'text', text: 'summary done' },
      { type: 'text', text: `Note: thread ${thread.id} belongs to the agent ${owner.name}; this turn was run by ${SUMMARISE}, which sees the thread's messages.` },
    ]);
    const meta = result._meta as Record<string, unknown>;
    expect(meta).toMatchObject({ threadId: thread.id, agentId: summarise, threadAgentId: owner.id });
    expect((await findRunResult(engine.db, String(meta.runId)))?.agentId).toBe(summarise);
    // On its own thread, a call's answer stands alone.
    const own = await client.callTool({ name: SUMMARISE, arguments: { input: 'again' } }, { timeout: 120_000 });
    expect(own.content).toEqual([{ type: 'text', text: 'summary done' }]);
    expect(own._meta).toMatchObject({ agentId: summarise });
    expect(own._meta).not.toHaveProperty('threadAgentId');
  }, 120_000);

  it('an input longer than the REST API allows (1,000,000 characters) is refused, and no run starts', async () => {
    // Runs of this agent only: other suites start runs in the same database meanwhile.
    const runsOfAgent = async () => (await engine.db.query(
      'SELECT count(*)::int AS n FROM runs r JOIN agents a ON a.id = r.agent_id WHERE a.name = $1', [SUMMARISE])).rows[0].n;
    const before = await runsOfAgent();
    const result = await client.callTool({ name: SUMMARISE, arguments: { input: 'x'.repeat(1_000_001) } }, { timeout: 60_000 });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'The "input" argument must be at most 1000000 characters' }]);
    expect(await runsOfAgent()).toBe(before);
  }, 60_000);

  it('an input holding a NUL character is refused, not a failed call', async () => {
    const call = client.callTool({ name: SUMMARISE, arguments: { input: 'a\u0000b' } });
    // Over HTTP the request guard shared with /v1 answers 400 before any handler; stdio has no such layer.
    if (kind === 'stdio') await expect(call).resolves.toMatchObject({ isError: true, content: [{ type: 'text', text: 'The "input" argument contains a NUL character (\\u0000), which cannot be stored' }] });
    else await expect(call).rejects.toThrow(/params\.arguments\.input contains a NUL character/);
  });

  it('an unknown agent is an isError result, not a protocol error', async () => {
    const result = await client.callTool({ name: 'no_such_agent', arguments: { input: 'x' } });
    expect(result.isError).toBe(true);
  });

  // 2025: a notifications/cancelled; 2026 over HTTP: the request's stream closing; 2026 over stdio: a notifications/cancelled.
  it('cancelling a long call cancels its workflow', async () => {
    const abort = new AbortController();
    let started = false;
    // As above: progress is read from every notification, not only those the SDK still routes.
    client.setNotificationHandler('notifications/progress', (n) => {
      if (n.params.message === 'Turn 1') started = true;
    });
    const call = client.callTool({ name: SLOW, arguments: { input: 'take your time' } }, {
      signal: abort.signal, timeout: 120_000, onprogress: () => undefined,
    });
    const outcome = call.then(() => 'answered', () => 'rejected');
    await waitFor(async () => started, 60_000, 'the first turn');
    abort.abort('the user gave up');
    expect(await outcome).toBe('rejected');
    const runId = await cancelledRunOf(SLOW);
    // run_results is written just before the workflow closes: wait for the close itself.
    const handle = engine.client.workflow.getHandle(runId);
    await handle.result().catch(() => undefined);
    const description = await handle.describe();
    expect(description.status.name).toBe('CANCELLED');
  }, 120_000);
});

describe('the HTTP endpoint', () => {
  it('requires the API key when one is set', async () => {
    const response = await fetch(mcpUrl, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
  });

  it('an empty batch is an Invalid Request (-32600), not 202', async () => {
    const response = await fetch(mcpUrl, {
      method: 'POST', body: '[]',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${API_KEY}` },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: an empty batch' } });
  });

  it('refuses a browser page whose host name only resolves to loopback (DNS rebinding)', async () => {
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(mcpUrl, {
        method: 'POST',
        headers: { host: 'evil.example.com', origin: 'http://evil.example.com', authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    });
    expect(status).toBe(403);
  });
});
