import { nativeTools, toolHandlers } from '../../activities/tools';
import { parseToolArguments, toolInputSchema } from '../../activities/tools/native-tool';
import { promptTool } from '../../activities/tools/prompt';
import { resourceTool } from '../../activities/tools/resource';
import { sourceQueryTool } from '../../activities/tools/source-query';
import { NATIVE_TOOL_KINDS, offeredNativeTools, TOOL_TYPES } from '../../core/native-tool-kinds';
import type { ToolAvailability } from '../../core/tool-call';
import { toolResultText } from '../../core/tool-texts';
import { truncateUtf8, utf8Length } from '../../core/truncated-text';
import { routeToolCall, toolKinds } from '../../workflows/tool-kinds';

/** The native tools as their executions declare them (activities/tools/). */
const declaredTools = nativeTools.map((t) => t.tool);

/*
 * The tool-kind table through its entry points: what a turn offers and what a native tool takes
 * (activities/tools/), where a call goes and what the LLM reads when it fails
 * (workflows/tool-kinds.ts), and which activities execute them (activities/tools/). Expected texts
 * and schemas are the contract (docs/tools.md), written out.
 */
const none: ToolAvailability = { mcpRoutes: {}, integrationCount: 0, hasDataSources: false };
const withIntegration: ToolAvailability = { ...none, integrationCount: 1 };
const route = { integrationId: 'int_1', integrationName: 'files', toolName: 'read', toolTimeoutMs: 1000, totalTimeoutMs: 2000, retryable: false };

describe('the native tools a turn offers', () => {
  test('an agent without integrations or data sources is offered no native tools', () => {
    expect(offeredNativeTools(none)).toEqual([]);
    expect(routeToolCall('source_query', none).type).toBe('unknown');
  });

  test('data sources alone offer source_query; integrations offer all three native tools, in the order the LLM sees them', () => {
    expect(offeredNativeTools({ ...none, hasDataSources: true })).toEqual(['source_query']);
    expect(offeredNativeTools(withIntegration)).toEqual(['retrieve_mcp_resource', 'retrieve_mcp_prompt', 'source_query']);
    expect(offeredNativeTools({ ...withIntegration, hasDataSources: true })).toEqual(['retrieve_mcp_resource', 'retrieve_mcp_prompt', 'source_query']);
  });

  test('every native tool a turn can offer has an execution, and none more', () => {
    expect(nativeTools.map((t) => t.tool.name).sort()).toEqual(offeredNativeTools({ ...withIntegration, hasDataSources: true }).sort());
  });

  test('the native tools take the contract schemas', async () => {
    const schemaOf = async (name: string) => toolInputSchema(declaredTools.find((t) => t.name === name)!);
    expect(await schemaOf('retrieve_mcp_resource')).toMatchObject({
      type: 'object', required: ['integrationId', 'resourceUri'],
      properties: { integrationId: { type: 'string' }, resourceUri: { type: 'string' }, parameters: { type: 'object' } },
    });
    expect(Object.keys((await schemaOf('retrieve_mcp_resource')).properties as object)).toEqual(['integrationId', 'resourceUri', 'parameters']);
    expect(await schemaOf('retrieve_mcp_prompt')).toMatchObject({
      type: 'object', required: ['integrationId', 'promptName'],
      properties: { integrationId: { type: 'string' }, promptName: { type: 'string' }, arguments: { type: 'object' } },
    });
    expect(Object.keys((await schemaOf('retrieve_mcp_prompt')).properties as object)).toEqual(['integrationId', 'promptName', 'arguments']);
    expect(await schemaOf('source_query')).toMatchObject({
      type: 'object', required: ['sql'], properties: { sql: { type: 'string' }, limit: { type: 'integer' } },
    });
  });

  test('the same schemas check a call\'s arguments, with the contract\'s texts', () => {
    expect(parseToolArguments(resourceTool, { resourceUri: 'x' })).toEqual({ ok: false, message: 'integrationId parameter is required' });
    expect(parseToolArguments(resourceTool, { integrationId: ' ', resourceUri: 'x' })).toEqual({ ok: false, message: 'integrationId parameter is required' });
    expect(parseToolArguments(resourceTool, { integrationId: 'files' })).toEqual({ ok: false, message: 'resourceUri parameter is required' });
    expect(parseToolArguments(resourceTool, { integrationId: 'files', resourceUri: 'x', parameters: [1] }))
      .toEqual({ ok: false, message: 'parameters must be an object of template variable names to values' });
    expect(parseToolArguments(promptTool, { integrationId: 'files', promptName: 'p', arguments: 'x' }))
      .toEqual({ ok: false, message: 'arguments must be an object of argument names to values' });
    expect(parseToolArguments(promptTool, { integrationId: 'files' })).toEqual({ ok: false, message: 'promptName parameter is required' });
    expect(parseToolArguments(sourceQueryTool, { sql: 'select 1', limit: 2.5 })).toEqual({ ok: false, message: 'limit must be a positive integer' });
    expect(parseToolArguments(promptTool, { integrationId: 'files', promptName: 'p', arguments: null }))
      .toEqual({ ok: true, args: { integrationId: 'files', promptName: 'p' } });
  });
});

describe('where a tool call goes', () => {
  test('an MCP tool routes through the tool-name map, and names of Object.prototype are not tools', () => {
    const tools = { ...none, mcpRoutes: { files__read: route } };
    expect(routeToolCall('files__read', tools)).toMatchObject({ type: 'mcp_tool', route });
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) expect(routeToolCall(name, tools).type).toBe('unknown');
  });

  test('a native tool routes to its kind only while the run offers it', () => {
    expect(['retrieve_mcp_resource', 'retrieve_mcp_prompt', 'source_query'].map((name) => routeToolCall(name, withIntegration).type))
      .toEqual(['mcp_resource', 'mcp_prompt', 'source_query']);
    const dataOnly = { ...none, hasDataSources: true };
    expect(routeToolCall('source_query', dataOnly).type).toBe('source_query');
    expect(routeToolCall('retrieve_mcp_prompt', dataOnly).type).toBe('unknown');
  });

  test("a caller tool routes to its kind only in a run that declared it; another tool of the run's name keeps its own kind", () => {
    const tools = { ...withIntegration, callerTools: ['get_weather', 'source_query'] };
    expect(routeToolCall('get_weather', tools)).toMatchObject({ type: 'caller_tool', kind: { activity: 'askCallerTool' } });
    expect(routeToolCall('source_query', tools).type).toBe('source_query');
    expect(routeToolCall('get_weather', withIntegration).type).toBe('unknown');
    expect(toolKinds.caller_tool.failureText('boom', 'get_weather')).toBe('Caller tool get_weather failed: boom');
  });

  test('a tool of an integration that needs authorization is answered by the workflow with why, not "not found"', () => {
    const tools = { ...none, unauthorized: [{ prefix: 'gh__', integrationName: 'gh' }] };
    const locked = routeToolCall('gh__create_issue', tools);
    expect(locked.type).toBe('mcp_tool');
    expect(locked.kind.activity).toBeUndefined();
    expect(locked.kind.failureText('', 'gh__create_issue')).toBe('MCP tool execution failed: integration gh needs authorization; an operator must authorize it');
    expect(routeToolCall('ghx__create_issue', tools).type).toBe('unknown');
  });
});

describe('what the LLM reads when a tool kind gives up', () => {
  test('each kind answers with its contract text', () => {
    expect(toolKinds.mcp_tool.failureText('connection closed', '')).toBe('MCP tool execution failed unexpectedly: connection closed');
    expect(toolKinds.mcp_resource.failureText('boom', '')).toBe('Resource retrieval failed: boom');
    expect(toolKinds.mcp_prompt.failureText('boom', '')).toBe('Prompt retrieval failed: boom');
    expect(toolKinds.source_query.failureText('boom', '')).toBe('Source query failed: boom');
    expect(toolKinds.unknown.failureText('', 'nope')).toBe('A tool with the name nope was not found. Only use tools that are available in your given list of tools.');
  });

  test('the texts the activities use match the contract exactly', () => {
    expect(toolResultText.unknownTool('x')).toBe('A tool with the name x was not found. Only use tools that are available in your given list of tools.');
    expect(toolResultText.mcpToolFailed('bad input')).toBe('MCP tool execution failed: bad input');
    expect(toolResultText.mcpToolTimedOut(1500)).toBe('MCP tool execution failed: timed out after 1500 ms');
    expect(toolResultText.mcpToolMissingIntegration()).toBe('MCP tool configuration error: missing integration ID');
  });

  test('previews are cut on UTF-8 character boundaries', () => {
    expect(truncateUtf8('aé€😀', 3)).toBe('aé');
    expect(truncateUtf8('aé€😀', 6)).toBe('aé€');
    expect(utf8Length('aé€😀')).toBe(1 + 2 + 3 + 4);
  });
});

describe('the activity around each kind', () => {
  const call = { turn: 2, index: 0, name: 'files__read' };

  test('an MCP tool runs once unless trusted to repeat, and its activity outlasts its MCP bound', () => {
    expect(toolKinds.mcp_tool.options!(call, route)).toMatchObject({ activityId: 'mcp:2:0:files__read', retry: { maximumAttempts: 1 }, summary: 'MCP tool read on files' });
    expect(toolKinds.mcp_tool.options!(call, { ...route, retryable: true }).retry).toMatchObject({ maximumAttempts: 3 });
    expect(Number(toolKinds.mcp_tool.options!(call, route).startToCloseTimeout)).toBeGreaterThan(route.totalTimeoutMs);
  });

  test('time for elicitation answers lengthens the activity; a pinned integration\'s calls go to its task queue', () => {
    const plain = Number(toolKinds.mcp_tool.options!(call, route).startToCloseTimeout);
    expect(Number(toolKinds.mcp_tool.options!(call, { ...route, elicitationTimeoutMs: 600_000 }).startToCloseTimeout)).toBe(plain + 600_000);
    expect(toolKinds.mcp_tool.options!(call, route)).not.toHaveProperty('taskQueue');
    expect(toolKinds.mcp_tool.options!(call, { ...route, taskQueue: 'site-a' }).taskQueue).toBe('site-a');
  });

  test('native tools are reads: retried, and heartbeating', () => {
    for (const kind of [toolKinds.mcp_resource, toolKinds.mcp_prompt, toolKinds.source_query]) {
      expect(kind.options!({ ...call, summary: 's' })).toMatchObject({ summary: 's', retry: { maximumAttempts: 3 }, heartbeatTimeout: expect.anything() });
    }
  });

  test('every kind that runs an activity names a registered tool activity; the run object type enum lists every kind', () => {
    const activities = Object.values(toolKinds).flatMap((kind) => (kind.activity ? [kind.activity] : []));
    expect(activities).toHaveLength(6);
    for (const activity of activities) expect(Object.keys(toolHandlers)).toContain(activity);
    expect(TOOL_TYPES).toEqual(['mcp_tool', 'mcp_resource', 'mcp_prompt', 'source_query', 'sub_agent', 'caller_tool', 'unknown']);
  });

  test('the workflow\'s native tool kinds are the declared tools\', in the same order, and nothing else', () => {
    expect(declaredTools.map((t) => t.name)).toEqual(NATIVE_TOOL_KINDS.map((k) => k.name));
    for (const [i, kind] of NATIVE_TOOL_KINDS.entries()) {
      const tool = declaredTools[i];
      expect({ type: tool.type, activity: tool.activity, offered: tool.offered, options: tool.options }).toEqual({ type: kind.type, activity: kind.activity, offered: kind.offered, options: kind.options });
      expect(tool.failureText('x')).toBe(kind.failureText('x'));
    }
  });
});
