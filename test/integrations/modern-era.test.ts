import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { PrefixSnapshot } from '../../activities/run-snapshots';
import { csvImportedText } from '../../activities/tools/resource';
import type { ScriptStep } from '../../core/agent-model';
import type { Integration, NewIntegration } from '../../core/integration';
import { toolResultText } from '../../core/tool-texts';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { getSnapshot } from '../../store/runs/snapshots';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { MODERN_LABEL, startModernHttpServer, type ModernHttpServer } from '../fixtures/modern-mcp-server';

const ROOT = path.join(__dirname, '..', '..');
const MODERN_STDIO = path.join(__dirname, '..', 'fixtures', 'modern-mcp-server.ts');
const suffix = () => randomUUID().slice(0, 8);
const tool = (integration: Integration, name: string, args: Record<string, unknown> = {}) => ({ name: `${integration.name}__${name}`, arguments: args });

describe('a server that speaks only the 2026-07-28 era', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let http: ModernHttpServer;

  const integration = (extra: Partial<NewIntegration> = {}) => insertIntegration(engine.db, {
    name: `modern-${suffix()}`, transport: { type: 'http', url: http.url }, ...extra,
  });

  const run = (integrations: Integration[], script: ScriptStep[]) => engine.scriptedRun(integrations.map((i) => i.id), script);
  const view = async (i: Integration) => (await app.inject({ method: 'GET', url: `/v1/integrations/${i.id}` })).json() as Record<string, unknown>;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
    http = await startModernHttpServer();
  });
  afterAll(async () => {
    await stopApiEngine({ engine, app });
    await http.close();
  });

  test('over HTTP on auto: tools, a CSV resource imported and queried, prompts and prompt injection; the era is kept and shown', async () => {
    const modern = await integration();
    expect(await view(modern)).toMatchObject({ protocol: 'auto', protocolEra: null });
    const { runId, result } = await run([modern], [
      { toolCalls: [
        tool(modern, 'echo', { text: 'hi' }),
        { name: 'retrieve_mcp_resource', arguments: { integrationId: modern.id, resourceUri: 'modern://data/sales.csv' } },
        { name: 'retrieve_mcp_resource', arguments: { integrationId: modern.id, resourceUri: 'modern://notes.txt' } },
        { name: 'retrieve_mcp_prompt', arguments: { integrationId: modern.id, promptName: 'greet', arguments: { name: 'Ada' } } },
      ] },
      { toolCalls: [{ name: 'source_query', arguments: { sql: 'SELECT sum(amount) AS total FROM sales' } }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result).toMatchObject({ status: 'completed' });
    expect(result.toolCalls.map((c) => [c.type, c.status])).toEqual([
      ['mcp_tool', 'ok'], ['mcp_resource', 'ok'], ['mcp_resource', 'ok'], ['mcp_prompt', 'ok'], ['source_query', 'ok'],
    ]);
    expect(result.toolCalls[0].result).toBe('modern echo: hi');
    expect(result.toolCalls[1].result).toBe(csvImportedText('modern://data/sales.csv', 'sales', [
      { name: 'region', type: 'text' }, { name: 'amount', type: 'integer' }], 2));
    expect(result.toolCalls[2].result).toBe('modern notes');
    expect(result.toolCalls[3].result).toContain('Greet Ada from the 2026 era.');
    expect(result.toolCalls[4].result).toContain('42');
    const prefix = (await getSnapshot<PrefixSnapshot>(engine.db, runId, 'prefix'))?.messages;
    expect(prefix?.[0].content).toContain(`You can use the ${MODERN_LABEL} tools.`);

    expect(http.methods).toContain('server/discover');
    expect(http.methods).not.toContain('initialize');
    expect(await view(modern)).toMatchObject({ protocol: 'auto', protocolEra: '2026-07-28' });
    const { rows } = await engine.db.query<{ era: string; discover: { supportedVersions: string[] } }>(
      'SELECT era, discover FROM integration_protocol WHERE id = $1', [modern.id]);
    expect(rows).toEqual([expect.objectContaining({ era: '2026-07-28', discover: expect.objectContaining({ supportedVersions: ['2026-07-28'] }) })]);
  });

  test('questions inside results: not asked without elicitation; too much state and too many rounds end the call with a text', async () => {
    const modern = await integration();
    const { result } = await run([modern], [
      { toolCalls: [tool(modern, 'confirm', { what: 'deploy' }), tool(modern, 'huge_state'), tool(modern, 'many_rounds'), tool(modern, 'sample')] },
      { text: '{{tool_results}}' },
    ]);
    const texts = result.toolCalls.map((c) => c.result);
    // Without the elicitation capability the server does not ask (-32021).
    expect(texts[0]).toMatch(/^MCP tool execution failed: .*elicitation\/create/);
    expect(texts[1]).toBe(toolResultText.mcpQuestionTooLarge());
    expect(texts[2]).toBe(toolResultText.mcpTooManyRounds(8));
    // The server refuses itself to ask for what the engine did not declare (-32021).
    expect(texts[3]).toMatch(/^MCP tool execution failed: .*sampling\/createMessage/);
    expect(result.toolCalls.map((c) => c.status)).toEqual(['error', 'error', 'error', 'error']);
  });

  test('with elicitation, the question inside a result waits durably (no activity running) for the answer given through the API', async () => {
    const modern = await integration({ elicitation: true });
    const agent = await insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, integrationIds: [modern.id],
      model: { provider: 'scripted', script: [{ toolCalls: [tool(modern, 'confirm', { what: 'ship' })] }, { text: '{{tool_results}}' }] },
    });
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    let input: { inputId: string; message: string } | undefined;
    for (let i = 0; i < 100 && !input; i++) {
      input = ((await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json() as { pendingInputs: { inputId: string; message: string }[] }).pendingInputs[0];
      if (!input) await new Promise((r) => setTimeout(r, 200));
    }
    expect(input?.message).toBe('Really ship?');
    // The question is stored and the activity has ended: the workflow waits on its own.
    expect((await engine.client.workflow.getHandle(runId).describe()).raw.pendingActivities ?? []).toEqual([]);
    const answered = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/inputs/${input!.inputId}`, payload: { action: 'accept', content: { confirm: true } } });
    expect(answered.statusCode).toBe(200);
    const result = await engine.result(runId);
    expect(result.output).toBe('ship: confirmed=true, state=asked:ship');
  });

  test('pinned to 2025-11-25, the server refuses the engine: unreachable, and the era shown is the pin', async () => {
    const pinned = await integration({ protocol: '2025-11-25' });
    const { result } = await run([pinned], [{ text: 'done' }]);
    expect(result.status).toBe('completed');
    const capabilities = await app.inject({ method: 'GET', url: `/v1/integrations/${pinned.id}/capabilities` });
    expect(capabilities.body).toMatch(/Unsupported protocol version|-32022/);
    expect(await view(pinned)).toMatchObject({ protocol: '2025-11-25', protocolEra: '2025-11-25' });
    const { rowCount } = await engine.db.query('SELECT 1 FROM integration_protocol WHERE id = $1', [pinned.id]);
    expect(rowCount).toBe(0);
  });

  test('over stdio, pinned to 2026-07-28: tools and prompts', async () => {
    const stdio = await insertIntegration(engine.db, {
      name: `modern-stdio-${suffix()}`, protocol: '2026-07-28',
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', MODERN_STDIO], cwd: ROOT },
    });
    const { result } = await run([stdio], [
      { toolCalls: [tool(stdio, 'echo', { text: 'pipe' }), { name: 'retrieve_mcp_prompt', arguments: { integrationId: stdio.id, promptName: 'greet', arguments: { name: 'Bo' } } }] },
      { text: '{{tool_results}}' },
    ]);
    expect(result.toolCalls.map((c) => c.result)).toEqual(['modern echo: pipe', expect.stringContaining('Greet Bo from the 2026 era.')]);
    expect(await view(stdio)).toMatchObject({ protocol: '2026-07-28', protocolEra: '2026-07-28' });
  });
});
