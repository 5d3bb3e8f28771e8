import { randomUUID } from 'node:crypto';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration, type NewIntegration } from '../../core/integration';
import { insertThread } from '../../store/threads/threads';
import { toolResultText } from '../../core/tool-texts';
import { startEngine, type Engine } from '../support/engine';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/http-mcp-server';

/*
 * An HTTP MCP server's answers are read with a bound, as a stdio server's lines are: a tool call's
 * answer at most 2 × maxResultBytes + 1 MiB, anything else 2 × maxResourceBytes + 1 MiB. Past it the
 * connection is cut, so a runaway server cannot fill the worker's memory; the sizes here are small.
 */
const MAX_RESULT_BYTES = 1000;
const TOOL_BOUND = 2 * MAX_RESULT_BYTES + 1024 * 1024;
const OVER = 2 * 1024 * 1024;
const overBound = toolResultText.mcpToolFailed(`message of more than ${TOOL_BOUND} bytes exceeds the transport bound of ${TOOL_BOUND} bytes`);

describe('tool results from HTTP MCP servers are bounded', () => {
  let engine: Engine;
  let server: HttpMcpServer;

  const integration = (url: string, extra: Partial<NewIntegration> = {}) => insertIntegration(engine.db, {
    name: `http-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url }, maxResultBytes: MAX_RESULT_BYTES, ...extra,
  });

  async function run(target: Integration, script: ScriptStep[]) {
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: [target.id],
    });
    const runId = await engine.start({ threadId: (await insertThread(engine.db, agent.id)).id, input: 'go' });
    return engine.result(runId);
  }

  /** One call of `tool`, then an answer that repeats what the LLM saw. */
  const callOnce = async (target: Integration, tool: string, args: Record<string, unknown>) =>
    (await run(target, [{ toolCalls: [{ name: `${target.name}__${tool}`, arguments: args }] }, { text: '{{tool_results}}' }])).output;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    server = await startHttpMcpServer();
  });
  afterAll(async () => {
    await engine.close();
    await server.close();
  });

  test('a JSON answer over the bound gets the transport-bound text (its declared size, unread), and the next call on the connection works', async () => {
    const target = await integration(server.url.json);
    const refused = /^MCP tool execution failed: message of (\d+) bytes exceeds the transport bound of (\d+) bytes$/.exec(await callOnce(target, 'sized', { bytes: OVER }) ?? '');
    expect(Number(refused?.[1])).toBeGreaterThan(OVER);
    expect(Number(refused?.[1])).toBeLessThan(OVER + 200);
    expect(Number(refused?.[2])).toBe(TOOL_BOUND);
    expect(await callOnce(target, 'sized', { bytes: 10 })).toBe('y'.repeat(10));
  });

  test('an answer on a POST\'s event stream over the bound gets the same text, and the connection stays usable', async () => {
    const target = await integration(server.url.sse);
    expect(await callOnce(target, 'sized', { bytes: OVER })).toBe(overBound);
    expect(await callOnce(target, 'sized', { bytes: 10 })).toBe('y'.repeat(10));
    // Under the bound, the result's own check still decides: 1001 bytes of text is over maxResultBytes.
    expect(await callOnce(target, 'sized', { bytes: MAX_RESULT_BYTES + 1 })).toBe(toolResultText.mcpToolFailed(`result exceeds ${MAX_RESULT_BYTES} bytes`));
  });

  test('a message on the session\'s GET stream over the bound cuts that stream; tool calls go on', async () => {
    const target = await integration(server.url.sse, { maxResourceBytes: 1000 });
    expect(await callOnce(target, 'flood_get_stream', { bytes: OVER })).toBe('the client cut the GET stream');
    expect(await callOnce(target, 'sized', { bytes: 10 })).toBe('y'.repeat(10));
  });

  test('the tool bound is not the resource bound: a resource larger than maxResultBytes is read whole', async () => {
    const target = await integration(server.url.sse);
    const output = (await run(target, [
      { toolCalls: [{ name: 'retrieve_mcp_resource', arguments: { integrationId: target.name, resourceUri: 'fixture://sized/5000' } }] },
      { text: '{{tool_results}}' },
    ])).output;
    expect(output).toBe('r'.repeat(5000));
  });

  test('over the older HTTP+SSE transport, whose answers share one GET stream, an answer over the bound gets the same text; the next call reconnects', async () => {
    // That stream carries every message, so its bound is the resource one: 1000 bytes here, as the results'.
    const target = await integration(server.url.legacy, { maxResourceBytes: MAX_RESULT_BYTES });
    const streams = server.hits.get('/legacy') ?? 0;
    expect(await callOnce(target, 'sized', { bytes: OVER })).toBe(overBound);
    expect(await callOnce(target, 'sized', { bytes: 10 })).toBe('y'.repeat(10));
    // The first connection (protocol auto): the era probe, the Streamable HTTP initialize and the SSE
    // stream; the second, with the kept 2025 verdict: the Streamable HTTP attempt and the SSE stream.
    expect((server.hits.get('/legacy') ?? 0) - streams).toBe(5);
  });
});
