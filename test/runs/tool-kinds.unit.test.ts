import { committableMessages } from '../../activities/finish-run';
import { ConfigError, loadConfig } from '../../platform/config';
import { createScriptedProvider } from '../../llm/scripted';
import type { ChatMessage } from '../../core/messages';
import { resolveTemporalCli } from '../../platform/temporal/cli';
import { offeredNativeTools } from '../../core/native-tools';
import { routeToolCall, TOOL_TYPES, toolKinds } from '../../workflows/tool-kinds';
import { toolResultText } from '../../core/tool-texts';
import { truncateUtf8, utf8Length } from '../../core/truncated-text';

describe('the tool-kind table', () => {
  const none = { mcpRoutes: {}, integrationCount: 0, hasDataSources: false };
  const route = { integrationId: 'int_1', integrationName: 'files', toolName: 'read', toolTimeoutMs: 1000, totalTimeoutMs: 2000, retryable: false };
  test('an agent without integrations or data sources is offered no native tools', () => {
    expect(offeredNativeTools(none)).toEqual([]);
    expect(routeToolCall('source_query', none).type).toBe('unknown');
  });
  test('data sources alone offer source_query; integrations offer all three native tools', () => {
    expect(offeredNativeTools({ ...none, hasDataSources: true })).toEqual(['source_query']);
    expect(offeredNativeTools({ ...none, integrationCount: 1 })).toEqual(['retrieve_mcp_resource', 'retrieve_mcp_prompt', 'source_query']);
    expect(routeToolCall('retrieve_mcp_prompt', { ...none, integrationCount: 1 }).type).toBe('mcp_prompt');
  });
  test('an MCP tool routes through the tool-name map, and "toString" is not a tool', () => {
    const tools = { ...none, mcpRoutes: { files__read: route } };
    expect(routeToolCall('files__read', tools)).toMatchObject({ type: 'mcp_tool', route });
    expect(routeToolCall('toString', tools).type).toBe('unknown');
  });
  test('an MCP tool runs once unless trusted to repeat, and its activity outlasts its MCP bound', () => {
    const call = { turn: 2, index: 0, name: 'files__read' };
    expect(toolKinds.mcp_tool.options!(call, route)).toMatchObject({ activityId: 'mcp:2:0:files__read', retry: { maximumAttempts: 1 }, summary: 'MCP tool read on files' });
    expect(toolKinds.mcp_tool.options!(call, { ...route, retryable: true }).retry).toMatchObject({ maximumAttempts: 3 });
    expect(Number(toolKinds.mcp_tool.options!(call, route).startToCloseTimeout)).toBeGreaterThan(route.totalTimeoutMs);
  });
  test('the unknown kind answers with the contract text, and the run object type enum lists every kind', () => {
    expect(toolKinds.unknown.failureText('', 'nope')).toBe(toolResultText.unknownTool('nope'));
    expect(TOOL_TYPES).toEqual(['mcp_tool', 'mcp_resource', 'mcp_prompt', 'source_query', 'unknown']);
  });
});

describe('tool result texts', () => {
  test('match the contract exactly', () => {
    expect(toolResultText.unknownTool('x')).toBe('A tool with the name x was not found. Only use tools that are available in your given list of tools.');
    expect(toolResultText.mcpToolTimedOut(1500)).toBe('MCP tool execution failed: timed out after 1500 ms');
    expect(toolResultText.mcpToolMissingIntegration()).toBe('MCP tool configuration error: missing integration ID');
  });
  test('previews are cut on UTF-8 character boundaries', () => {
    expect(truncateUtf8('aé€😀', 3)).toBe('aé');
    expect(truncateUtf8('aé€😀', 6)).toBe('aé€');
    expect(utf8Length('aé€😀')).toBe(1 + 2 + 3 + 4);
  });
});

describe('the scripted provider', () => {
  const provider = createScriptedProvider();
  const signal = new AbortController().signal;
  const model = { provider: 'scripted' as const, script: [
    { toolCalls: [{ name: 'a', arguments: { n: 1 } }, { name: 'b', arguments: {} }] },
    { text: 'results: {{tool_results}}' },
  ] };
  test('plays one step per turn, with one tool call per entry', async () => {
    const r = await provider.complete({ model, messages: [], tools: [], turn: 1, signal });
    expect(r.toolCalls).toEqual([{ id: 'call_1_1', name: 'a', arguments: { n: 1 } }, { id: 'call_1_2', name: 'b', arguments: {} }]);
  });
  test('replaces {{tool_results}} with the previous turn results, joined by newlines', async () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: [] },
      { role: 'tool', toolCallId: '1', name: 'a', content: 'one' },
      { role: 'tool', toolCallId: '2', name: 'b', content: 'two' },
    ];
    const r = await provider.complete({ model, messages, tools: [], turn: 2, signal });
    expect(r).toMatchObject({ text: 'results: one\ntwo', toolCalls: [] });
  });
  test('ends with the last text when the script runs out, or with an empty answer', async () => {
    expect((await provider.complete({ model, messages: [], tools: [], turn: 9, signal })).text).toBe('results: {{tool_results}}');
    const toolsOnly = { provider: 'scripted' as const, script: [{ toolCalls: [{ name: 'a', arguments: {} }] }] };
    expect(await provider.complete({ model: toolsOnly, messages: [], tools: [], turn: 2, signal })).toMatchObject({ text: '', toolCalls: [] });
  });
  test('a step with delayMs stops waiting when the activity is cancelled', async () => {
    const ac = new AbortController();
    const slow = { provider: 'scripted' as const, script: [{ text: 'late', delayMs: 60_000 }] };
    const pending = provider.complete({ model: slow, messages: [], tools: [], turn: 1, signal: ac.signal });
    ac.abort(new Error('cancelled'));
    await expect(pending).rejects.toThrow('cancelled');
  });
});

describe('committing a run to its thread', () => {
  const m = (turn: number, slot: number, message: ChatMessage) => ({ turn, slot, message });
  test('keeps whole turns only: a tool call without its result is dropped with everything after it', () => {
    const call = (id: string) => ({ id, name: 't', arguments: {} });
    const kept = committableMessages([
      m(0, 0, { role: 'user', content: 'q' }),
      m(1, 0, { role: 'assistant', content: '', toolCalls: [call('1')] }),
      m(1, 1, { role: 'tool', toolCallId: '1', name: 't', content: 'r' }),
      m(2, 0, { role: 'assistant', content: '', toolCalls: [call('2'), call('3')] }),
      m(2, 1, { role: 'tool', toolCallId: '2', name: 't', content: 'r' }),
    ]);
    expect(kept.map((x) => x.role)).toEqual(['user', 'assistant', 'tool']);
  });
});

describe('configuration', () => {
  test('defaults apply to an empty environment', () => {
    expect(loadConfig({})).toMatchObject({ taskQueue: 'agent-runs', port: 3000, temporalNamespace: 'default', logLevel: 'info', workerNice: 10 });
    expect(loadConfig({ WORKER_NICE: '0' }).workerNice).toBe(0);
  });
  test('bad values give one readable error naming each variable', () => {
    const bad = () => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', WORKER_NICE: '-5' });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/^Invalid configuration:\n/);
    expect(bad).toThrow(/\n {2}DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(bad).toThrow(/\n {2}PORT: /);
    expect(bad).toThrow(/\n {2}LOG_LEVEL: /);
    expect(bad).toThrow(/\n {2}WORKER_NICE: /);
  });
  test('a TEMPORAL_CLI_PATH that is not executable is reported with how to get the CLI', async () => {
    await expect(resolveTemporalCli({ cliPath: '/nonexistent/temporal' })).rejects.toThrow(/not an executable file[\s\S]*go install github.com\/temporalio\/cli/);
  });
});
