import type { ActivityDeps } from '../../activities/deps';
import { mcpToolDefinitions } from '../../activities/tools/mcp-tool';
import { promptExecution } from '../../activities/tools/prompt';
import { resourceExecution } from '../../activities/tools/resource';
import type { DiscoveredIntegration } from '../../core/discovery';
import { assignExposedNames, exposedToolName } from '../../mcp-client/naming';
import { toolResultContentText } from '../../mcp-client/tool-result-text';
import { toPublic } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';

describe('MCP tool names', () => {
  test('are <integration>__<tool>, sanitised to [A-Za-z0-9_-]', () => {
    expect(exposedToolName('github', 'create.issue/v2')).toBe('github__create_issue_v2');
  });

  test('longer than 64 characters keep their start and end with a hash, distinct for distinct tools', () => {
    const a = exposedToolName('integration', `a_very_long_tool_name_${'x'.repeat(60)}_one`);
    const b = exposedToolName('integration', `a_very_long_tool_name_${'x'.repeat(60)}_two`);
    expect(a).toHaveLength(64);
    expect(a).toMatch(/^integration__a_very_long_tool_name_x+_[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
  });

  test('that collide after sanitising are made unique', () => {
    const names = assignExposedNames([{ integrationName: 'fs', toolName: 'read.file' }, { integrationName: 'fs', toolName: 'read_file' }]);
    expect(names[0]).toBe('fs__read_file');
    expect(names[1]).toMatch(/^fs__read_file_[0-9a-f]{8}$/);
  });
});

describe('MCP tool result text', () => {
  test('joins text, pretty-prints unknown objects and leaves placeholders for binary content', () => {
    expect(toolResultContentText({
      content: [
        { type: 'text', text: 'a' },
        { type: 'audio', data: Buffer.alloc(10).toString('base64'), mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///x.bin', blob: Buffer.alloc(7).toString('base64'), mimeType: 'application/zip' } },
        { type: 'resource_link', uri: 'file:///y', name: 'y' },
      ],
    })).toBe('a\n[audio: audio/wav, 10 bytes]\n[blob: application/zip, 7 bytes, file:///x.bin]\n'
      + JSON.stringify({ type: 'resource_link', uri: 'file:///y', name: 'y' }, null, 2));
  });

  test('shows structured content as JSON with 2-space indent when there is no text', () => {
    expect(toolResultContentText({ content: [], structuredContent: { sum: 3 } })).toBe('{\n  "sum": 3\n}');
  });
});

describe('tool definitions', () => {
  const ok: DiscoveredIntegration & { exposedToolNames: string[] } = {
    id: 'int_1', name: 'files', status: 'ok', exposedToolNames: ['files__read'],
    tools: [{ name: 'read', description: 'Reads a file', inputSchema: { type: 'object' } }],
    resources: [{ uri: 'file:///a.csv', name: 'a' }], resourceTemplates: [], prompts: [{ name: 'system_prompt' }],
  };
  const down: DiscoveredIntegration & { exposedToolNames: string[] } = {
    id: 'int_2', name: 'crm', status: 'unreachable', error: 'spawn crm ENOENT', exposedToolNames: [],
    tools: [], resources: [], resourceTemplates: [], prompts: [],
  };

  test('native tool descriptions name every integration, and say which are unreachable', async () => {
    const ctx = { deps: {} as ActivityDeps, threadId: 't', integrations: [ok, down], hasDataSources: false };
    const [resource, prompt] = await Promise.all([resourceExecution.native!.describe(ctx), promptExecution.native!.describe(ctx)]);
    expect(resource).toContain('- int_1 (name: files): resources: file:///a.csv (a)');
    expect(resource).toContain('- int_2 (name: crm): unreachable (spawn crm ENOENT)');
    expect(prompt).toContain('- int_1 (name: files): prompts: system_prompt');
  });

  test('MCP tools are offered under their exposed names, only for reachable integrations', () => {
    expect(mcpToolDefinitions([ok, down])).toEqual([{ name: 'files__read', description: 'Reads a file', inputSchema: { type: 'object' } }]);
  });
});

test('the public view of an integration shows env and header names, never their values', () => {
  const base = {
    id: 'int_1', name: 'x', toolTimeoutMs: 1, maxTotalTimeoutMs: null, maxResourceBytes: 1, maxResultBytes: 1, trustAnnotations: false, retryNonIdempotent: false,
    enabled: true, promptInjection: true, disabledPrompts: [], promptArguments: {}, taskQueue: null, approval: null, elicitation: false, elicitationTimeoutMs: 600_000, allowPrivateNetwork: false, protocol: 'auto' as const, sampling: 'never' as const, samplingMaxTokens: 1024, taskTimeoutMs: 3_600_000, promptCacheTtlMs: null, maxConcurrentCalls: 10, createdAt: '', updatedAt: '',
  };
  const stdio: Integration = { ...base, transport: { type: 'stdio', command: 'srv', env: { TOKEN: 'secret-1' } } };
  const http: Integration = { ...base, transport: { type: 'http', url: 'https://h/mcp', headers: { Authorization: 'Bearer secret-2' } } };
  expect(toPublic(stdio).transport).toEqual({ type: 'stdio', command: 'srv', args: [], envKeys: ['TOKEN'] });
  expect(toPublic(http).transport).toEqual({ type: 'http', url: 'https://h/mcp', headerKeys: ['Authorization'] });
  expect(JSON.stringify([toPublic(stdio), toPublic(http)])).not.toMatch(/secret/);
});
