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
