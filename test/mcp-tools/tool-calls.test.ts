import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration, type NewIntegration } from '../../core/integration';
import { getSnapshot } from '../../store/runs/snapshots';
import { listEvents } from '../../store/runs/events';
import { findToolCallAndRequest } from '../../store/runs/tool-calls';
import { runTurns } from '../../store/runs/turns';
import { runTranscript } from '../../store/runs/transcript';
import { insertThread } from '../../store/threads/threads';
import type { ActivityDeps } from '../../activities/deps';
import type { DiscoverySnapshot } from '../../activities/run-snapshots';
import { createToolCallActivities } from '../../activities/tool-call';
import { toolHandlers } from '../../activities/tools';
import { toolResultText } from '../../core/tool-texts';
import { logger, startEngine, type Engine } from '../support/engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { freePort } from '../../platform/ports';
import { processesWith } from '../support/processes';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
/** Every fixture process of this file carries the marker, so the leftover check finds ours and only ours. */
const MARKER = `--marker=${randomUUID()}`;
const suffix = () => randomUUID().slice(0, 8);

describe('MCP tools in a run', () => {
  let engine: Engine;
  let fixture: Integration;
  let countFile: string;

  const fixtureIntegration = (name: string, extra: Partial<NewIntegration> = {}) => insertIntegration(engine.db, {
    name: `${name}-${suffix()}`,
    transport: {
      type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, MARKER], cwd: ROOT,
      env: { COUNT_FILE: countFile },
    },
    ...extra,
  });

  const run = (integrations: Integration[], script: ScriptStep[]) => engine.scriptedRun(integrations.map((i) => i.id), script);

  /** One MCP call, then an answer that repeats the result: the output is what the LLM saw. */
  async function callOnce(integration: Integration, tool: string, args: Record<string, unknown> = {}) {
    return run([integration], [{ toolCalls: [{ name: `${integration.name}__${tool}`, arguments: args }] }, { text: '{{tool_results}}' }]);
  }

  beforeAll(async () => {
    engine = await startEngine('embedded');
    countFile = path.join(testStack().tmpDir, `count-${suffix()}`);
    fixture = await fixtureIntegration('fixture');
  });
  afterAll(async () => {
    await engine.close();
  });

  test('a tool response over the integration\'s maxResultBytes (default 1 MiB) is refused before it is stored', async () => {
    const { runId, result } = await callOnce(fixture, 'sized', { bytes: 10 * 1024 * 1024 });
    expect(result.output).toBe(toolResultText.mcpToolFailed('result exceeds 1048576 bytes'));
    const stored = (await runTranscript(engine.db, runId)).find((m) => m.message.role === 'tool')!;
    expect(stored.message.content).toBe(toolResultText.mcpToolFailed('result exceeds 1048576 bytes'));
    const small = await fixtureIntegration('bounded', { maxResultBytes: 1000 });
    expect((await callOnce(small, 'sized', { bytes: 1001 })).result.output).toBe(toolResultText.mcpToolFailed('result exceeds 1000 bytes'));
    expect((await callOnce(small, 'sized', { bytes: 1000 })).result.output).toBe('y'.repeat(1000));
  });

  test('the LLM sees at most the agent\'s maxToolResultBytes of a result; the transcript and the run object keep its size', async () => {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fixture.id], maxToolResultBytes: 2048,
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fixture.name}__sized`, arguments: { bytes: 5000 } }] }, { text: '{{tool_results}}' }] },
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    const result = await engine.result(runId);
    expect(result.output).toBe(`${'y'.repeat(2048)}\n[truncated: showing 2048 of 5000 bytes]`);
    expect(result.toolCalls[0]).toMatchObject({ status: 'ok', resultBytes: 5000 });
    const stored = (await runTranscript(engine.db, runId)).find((m) => m.message.role === 'tool')!;
    expect(stored.message.content).toBe('y'.repeat(5000));
  });

  test('the Web UI shows a readable summary for the run and for every step', async () => {
    const { runId } = await run([fixture], [
      { toolCalls: [
        { name: `${fixture.name}__echo`, arguments: { text: 'hi' } },
        { name: 'retrieve_mcp_prompt', arguments: { integrationId: fixture.name, promptName: 'greeting' } },
        { name: 'source_query', arguments: { sql: 'select 1\nfrom nowhere' } },
      ] },
      { text: 'done' },
    ]);
    const handle = engine.client.workflow.getHandle(runId);
    expect(await (await handle.describe()).staticSummary()).toMatch(/^agent-[0-9a-f-]+: go$/);
    const events = (await handle.fetchHistory()).events ?? [];
    const summaries = events.filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => [e.activityTaskScheduledEventAttributes!.activityType!.name, e.userMetadata?.summary && defaultPayloadConverter.fromPayload(e.userMetadata.summary)]);
    expect(summaries).toEqual(expect.arrayContaining([
      ['prepareRun', 'prepare the run (its input, its integrations, the prompt prefix), then LLM turn 1'],
      ['callMcpTool', `MCP tool echo on ${fixture.name}`],
      ['retrievePrompt', `prompt greeting from ${fixture.name}`],
      ['sourceQuery', 'SQL: select 1'],
      ['llmTurn', 'LLM turn 2'],
    ]));
  });

  test('an MCP tool and an unknown tool in the same turn: the LLM gets the echo and the unknown-tool text', async () => {
    const { runId, result } = await run([fixture], [
      { toolCalls: [{ name: `${fixture.name}__echo`, arguments: { text: 'hi' } }, { name: 'nope', arguments: {} }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer' });
    expect(result.toolCalls.map((c) => [c.name, c.type, c.integrationId, c.status, c.result])).toEqual([
      [`${fixture.name}__echo`, 'mcp_tool', fixture.id, 'ok', 'echo: hi'],
      ['nope', 'unknown', null, 'error', toolResultText.unknownTool('nope')],
    ]);
    expect(result.output).toBe(`echo: hi\n${toolResultText.unknownTool('nope')}`);

    const snapshot = await getSnapshot<DiscoverySnapshot>(engine.db, runId, 'discovery');
    expect(snapshot?.integrations[0]).toMatchObject({ id: fixture.id, status: 'ok', prompts: [{ name: 'greeting' }] });
    expect(snapshot?.integrations[0].exposedToolNames).toContain(`${fixture.name}__hang`);
  });

  test('a tool that returns isError gives "MCP tool execution failed: {message}"', async () => {
    const { result } = await callOnce(fixture, 'fail', { reason: 'disk full' });
    expect(result.toolCalls[0]).toMatchObject({ type: 'mcp_tool', status: 'error', result: 'MCP tool execution failed: disk full' });
    expect(result.output).toBe('MCP tool execution failed: disk full');
  });

  test('a result with a NUL and a lone surrogate is kept, with U+FFFD in their place, and the LLM sees it', async () => {
    const { result } = await callOnce(fixture, 'odd_text');
    expect(result.toolCalls[0]).toMatchObject({ type: 'mcp_tool', status: 'ok', result: 'nul:\ufffd|lone:\ufffd|pair:\ud83d\ude00' });
    expect(result).toMatchObject({ status: 'completed', output: 'nul:\ufffd|lone:\ufffd|pair:\ud83d\ude00' });
  });

  test('when the MCP server hangs, the LLM receives the timeout text and the run goes on', async () => {
    const slow = await fixtureIntegration('slow', { toolTimeoutMs: 1000 });
    const { result } = await callOnce(slow, 'hang');
    expect(result.output).toBe('MCP tool execution failed: timed out after 1000 ms');
    expect(result.toolCalls[0]).toMatchObject({ status: 'error', integrationId: slow.id });
    expect(result.toolCalls[0].durationMs).toBeGreaterThanOrEqual(1000);
    expect(result.toolCalls[0].durationMs).toBeLessThan(10_000);
  });

  test('a run cancelled during a hanging MCP call ends as cancelled, without waiting for the tool timeout', async () => {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [fixture.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: `${fixture.name}__hang`, arguments: {} }] }, { text: 'never' }] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === 'tool_call_started'), 30_000, 'the MCP call to start');
    const started = Date.now();
    await engine.client.workflow.getHandle(runId).cancel();
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  test('progress notifications keep a call alive past its per-request timeout', async () => {
    const patient = await fixtureIntegration('patient', { toolTimeoutMs: 500, maxTotalTimeoutMs: 10_000 });
    const { result } = await callOnce(patient, 'slow_progress', { ms: 1500 });
    expect(result.output).toBe('done after 1500 ms');
  });

  test('when the server process dies mid-call, the LLM gets "failed unexpectedly", and the next call reconnects', async () => {
    const fragile = await fixtureIntegration('fragile');
    const { result } = await run([fragile], [
      { toolCalls: [{ name: `${fragile.name}__crash`, arguments: {} }] },
      { toolCalls: [{ name: `${fragile.name}__echo`, arguments: { text: 'again' } }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.toolCalls.map((c) => c.result)).toEqual([toolResultText.mcpToolUnexpected('Connection closed'), 'echo: again']);
  });

  test('a server that cannot start is unreachable in discovery, and the run still completes with the others', async () => {
    const broken = await insertIntegration(engine.db, { name: `broken-${suffix()}`, transport: { type: 'stdio', command: '/nonexistent/mcp-server' } });
    const { runId, result } = await run([broken, fixture], [
      { toolCalls: [{ name: `${fixture.name}__echo`, arguments: { text: 'still here' } }, { name: `${broken.name}__anything`, arguments: {} }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.status).toBe('completed');
    expect(result.output).toBe(`echo: still here\n${toolResultText.unknownTool(`${broken.name}__anything`)}`);
    const snapshot = await getSnapshot<DiscoverySnapshot>(engine.db, runId, 'discovery');
    expect(snapshot?.integrations.map((i) => [i.id, i.status])).toEqual([[broken.id, 'unreachable'], [fixture.id, 'ok']]);
    expect(snapshot?.integrations[0].error).toMatch(/ENOENT/);
  });

  test('an HTTP server nobody listens for: discovery and the LLM read why the connection failed, not only "fetch failed"', async () => {
    const port = await freePort();
    const closed = await insertIntegration(engine.db, { name: `closed-${suffix()}`, transport: { type: 'http', url: `http://127.0.0.1:${port}/mcp` } });
    const why = `fetch failed (connect ECONNREFUSED 127.0.0.1:${port})`;
    const { runId, result } = await run([closed], [
      { toolCalls: [{ name: 'retrieve_mcp_resource', arguments: { integrationId: closed.id, resourceUri: 'file:///readme' } }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.output).toBe(toolResultText.resourceFailed(why));
    const snapshot = await getSnapshot<DiscoverySnapshot>(engine.db, runId, 'discovery');
    expect(snapshot?.integrations.map((i) => [i.status, i.error])).toEqual([['unreachable', why]]);
  });

  test('a 100 KB result is stored in full; the run keeps a 2 KB preview', async () => {
    const { runId, result } = await callOnce(fixture, 'big');
    expect(result.toolCalls[0]).toMatchObject({ status: 'ok', resultBytes: 100 * 1024 });
    expect(Buffer.byteLength(result.toolCalls[0].result)).toBeLessThanOrEqual(2048);
    const transcript = await runTranscript(engine.db, runId);
    const tool = transcript.find((m) => m.message.role === 'tool')!.message;
    expect(tool.content).toHaveLength(100 * 1024);
  });

  test('start events and attempt counts lost with their unflushed commit are written again by the step that ends', async () => {
    const slow = await insertIntegration(engine.db, {
      name: `slow-${suffix()}`,
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, MARKER], cwd: ROOT, env: { COUNT_FILE: `${countFile}-slow` } },
    });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [slow.id], model: {
        provider: 'scripted',
        script: [{ delayMs: 1500, toolCalls: [{ name: `${slow.name}__count_slowly`, arguments: { ms: 1500 } }] }, { text: '{{tool_results}}' }],
      },
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    const lose = async (type: string) => {
      await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === type));
      await engine.db.query('DELETE FROM run_events WHERE run_id = $1 AND type = $2', [runId, type]);
    };
    // As PostgreSQL would lose them if it stopped before flushing: the turn's start while the LLM thinks, the call's while the tool works.
    await lose('turn_started');
    await engine.db.query('DELETE FROM run_turns WHERE run_id = $1', [runId]);
    await lose('tool_call_started');

    expect(await engine.result(runId)).toMatchObject({ status: 'completed', output: 'counted slowly: 1' });
    const events = await listEvents(engine.db, runId);
    expect(events.map((e) => `${e.seq} ${e.type}`)).toEqual([
      '1 run_started', '2 turn_started', '3 turn_ended', '4 tool_call_started', '5 tool_call_ended', '6 turn_started', '7 turn_ended', '8 run_ended',
    ]);
    expect(events[3].data).toMatchObject({ toolCallId: 'call_1_1', integrationId: slow.id });
    expect(await runTurns(engine.db, runId)).toEqual([{ turn: 1, attempts: 1, completed: true }, { turn: 2, attempts: 1, completed: true }]);

    // Not flushing is the progress statement's own setting: the connection flushes every later commit again.
    const client = await engine.db.connect();
    try {
      await findToolCallAndRequest(client, runId, 1, 1, { integrationId: slow.id, started: { seq: 4, data: {} } });
      expect((await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
    } finally {
      client.release();
    }
  });

  test('the answer the workflow records for a call that gave up never replaces the result the call stored (its worker died before reporting)', async () => {
    const { runId, result } = await callOnce(fixture, 'echo', { text: 'kept' });
    const [call] = result.toolCalls;
    const started = (await listEvents(engine.db, runId)).find((e) => e.type === 'tool_call_started')!;
    // What the workflow does when the call's activity timed out after its worker had stored the result.
    const outcome = await createToolCallActivities({ db: engine.db, logger } as ActivityDeps, toolHandlers).recordToolResult({
      runId, threadId: result.threadId, turn: 1, index: 0, toolCallId: call.id, name: call.name, type: 'mcp_tool', eventSeq: started.seq,
      status: 'error', content: toolResultText.mcpToolUnexpected('activity StartToClose timeout'),
    });
    expect(outcome).toEqual({ status: 'ok', resultBytes: call.resultBytes });
    expect((await runTranscript(engine.db, runId)).find((m) => m.message.role === 'tool')!.message.content).toBe('echo: kept');
    expect((await findToolCallAndRequest(engine.db, runId, 1, 1)).stored).toMatchObject({ status: 'ok', result: 'echo: kept' });
    expect((await listEvents(engine.db, runId)).filter((e) => e.type === 'tool_call_ended').map((e) => e.data.status)).toEqual(['ok']);
  });

  test('a tool runs exactly once per call, and images become placeholders', async () => {
    const { result } = await run([fixture], [
      { toolCalls: [{ name: `${fixture.name}__count`, arguments: {} }, { name: `${fixture.name}__mixed`, arguments: {} }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.output).toBe('count: 1\nfirst\n[image: image/png, 1234 bytes]\nlast');
    expect(fs.readFileSync(countFile, 'utf8')).toBe('x');
  });

  test('server-everything over stdio through npx: echo and get-sum', async () => {
    const everything = await insertIntegration(engine.db, {
      name: `everything-${suffix()}`, transport: { type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything', 'stdio', MARKER], cwd: ROOT },
    });
    const { result } = await run([everything], [
      { toolCalls: [
        { name: `${everything.name}__echo`, arguments: { message: 'hello' } },
        { name: `${everything.name}__get-sum`, arguments: { a: 2, b: 40 } },
      ] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.output).toBe('Echo: hello\nThe sum of 2 and 40 is 42.');
  });

  describe('server-everything over Streamable HTTP', () => {
    let server: ChildProcess;
    let url: string;
    beforeAll(async () => {
      const port = await freePort();
      url = `http://127.0.0.1:${port}/mcp`;
      const entry = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
      server = spawn(process.execPath, [entry, 'streamableHttp', MARKER], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore', detached: true });
      await waitFor(() => fetch(url, { method: 'GET' }).then(() => true, () => false), 20_000, 'the HTTP server to listen');
    });
    afterAll(async () => {
      const exited = new Promise((r) => server.once('exit', r));
      process.kill(-server.pid!, 'SIGTERM');
      await exited;
    });

    test('get-sum over HTTP', async () => {
      const remote = await insertIntegration(engine.db, { name: `remote-${suffix()}`, transport: { type: 'http', url } });
      const { result } = await callOnce(remote, 'get-sum', { a: 1, b: 2 });
      expect(result.output).toBe('The sum of 1 and 2 is 3.');
      expect(result.toolCalls[0]).toMatchObject({ type: 'mcp_tool', integrationId: remote.id, status: 'ok' });
    });
  });

  test('after the worker stops, no server process of this file is left', async () => {
    expect(processesWith(MARKER).length).toBeGreaterThan(0);
    await engine.stopWorker();
    await waitFor(async () => processesWith(MARKER).length === 0, 10_000, 'all MCP server processes to exit');
    expect(processesWith(MARKER)).toEqual([]);
    await engine.startWorker();
  });
});
