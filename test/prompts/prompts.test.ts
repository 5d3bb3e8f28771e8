import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import type { ActivityDeps } from '../../activities/deps';
import type { DiscoverySnapshot, PrefixSnapshot } from '../../activities/run-snapshots';
import { promptExecution } from '../../activities/tools/prompt';
import type { ScriptStep } from '../../core/agent-model';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration, type NewIntegration } from '../../core/integration';
import { getSnapshot } from '../../store/runs/snapshots';
import { listEvents } from '../../store/runs/events';
import { insertThread } from '../../store/threads/threads';
import type { ChatMessage } from '../../core/messages';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import { testStack } from '../support/stack-env';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-prompts-server.ts');
const suffix = () => randomUUID().slice(0, 8);
const run$ = promisify(execFile);
const call = (args: Record<string, unknown>) => ({ name: 'retrieve_mcp_prompt', arguments: args });

/** What the `all` fixture injects after the system message, for a server named `name`. */
const ALL_AFTER_SYSTEM: ChatMessage[] = [
  { role: 'user', content: 'First context.' },
  { role: 'user', content: 'Second context.' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'Weather', name: 'get_weather', arguments: { city: 'Paris' } }] },
  { role: 'tool', toolCallId: 'Weather', name: 'get_weather', content: '{"temp":15,"conditions":"sunny"}' },
  { role: 'assistant', content: 'Let me check the memory index.', toolCalls: [{ id: 'memory_index', name: 'memory_index', arguments: {} }] },
  { role: 'tool', toolCallId: 'memory_index', name: 'memory_index', content: 'index: projects, ideas' },
  { role: 'assistant', content: 'Understood.' },
];
/** A scripted model's tokens: 4 characters a token, per message, tool calls' names and arguments included. */
const estimated = (m: ChatMessage) => {
  const calls = m.role === 'assistant' ? (m.toolCalls ?? []) : [];
  return Math.ceil((m.content.length + calls.reduce((n, c) => n + c.name.length + JSON.stringify(c.arguments).length, 0)) / 4);
};
const allSystem = (name: string, instructions: string) => `[System instructions from Server: ${name}]\nYou can use the prompts-fixture tools.`
  + `\n\n---\n\n[Tool instructions from Server: ${name}]\nCall get_weather before answering about weather.`
  + `\n\n---\n\n[Thread System Prompt]\n${instructions}`;

describe('MCP prompts in a run', () => {
  let engine: Engine;
  let app: FastifyInstance;

  const promptsServer = (mode: string, extra: Partial<NewIntegration> & { label?: string; countFile?: string } = {}) => {
    const { label, countFile, ...rest } = extra;
    const env: Record<string, string> = { PROMPTS_MODE: mode };
    if (label) env.PROMPT_LABEL = label;
    if (countFile) env.COUNT_FILE = countFile;
    return insertIntegration(engine.db, {
      name: `${mode}-${suffix()}`, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, env },
      ...rest,
    });
  };

  async function agentWith(integrations: Integration[], script: ScriptStep[], instructions?: string) {
    return insertAgent(engine.db, {
      name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: integrations.map((i) => i.id), instructions,
    });
  }

  async function run(integrations: Integration[], script: ScriptStep[], instructions?: string) {
    const agent = await agentWith(integrations, script, instructions);
    const thread = await insertThread(engine.db, agent.id);
    const runId = await engine.start({ threadId: thread.id, input: 'go' });
    const result = await engine.result(runId);
    const prefix = (await getSnapshot<PrefixSnapshot>(engine.db, runId, 'prefix'))?.messages;
    return { runId, result, prefix };
  }

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
  });
  afterAll(() => stopApiEngine({ engine, app }));

  test('retrieve_mcp_prompt on server-everything: simple-prompt, args-prompt, and the contract error texts', async () => {
    const everything = await insertIntegration(engine.db, {
      name: `everything-${suffix()}`, transport: { type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'], cwd: ROOT },
    });
    const { runId, result } = await run([everything], [
      {
        toolCalls: [
          call({ integrationId: everything.id, promptName: 'simple-prompt' }),
          call({ integrationId: everything.name, promptName: 'args-prompt', arguments: { city: 'Paris', state: 'TX' } }),
          call({ integrationId: everything.id, promptName: 'args-prompt', arguments: { state: 'TX' } }),
          call({ promptName: 'simple-prompt' }),
          call({ integrationId: everything.id }),
          call({ integrationId: everything.id, promptName: 'no-such-prompt' }),
          call({ integrationId: 'int_elsewhere', promptName: 'simple-prompt' }),
          call({ integrationId: everything.id, promptName: 'resource-prompt', arguments: { resourceType: 'Text', resourceId: 1 } }),
        ],
      },
      { text: '{{tool_results}}' },
    ]);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer' });
    const calls = result.toolCalls;
    expect(calls.map((c) => [c.type, c.status])).toEqual([
      ['mcp_prompt', 'ok'], ['mcp_prompt', 'ok'], ['mcp_prompt', 'error'], ['mcp_prompt', 'error'],
      ['mcp_prompt', 'error'], ['mcp_prompt', 'error'], ['mcp_prompt', 'error'], ['mcp_prompt', 'ok'],
    ]);
    expect(calls[0]).toMatchObject({ integrationId: everything.id });
    expect(calls[0].result).toBe('Prompt: simple-prompt\nDescription: A prompt with no arguments\n\nMessages:\n1. User: This is a simple prompt without arguments.\n');
    expect(calls[1]).toMatchObject({ integrationId: everything.id });
    expect(calls[1].result).toBe("Prompt: args-prompt\nDescription: A prompt with two arguments, one required and one optional\n\nMessages:\n1. User: What's weather in Paris, TX?\n");
    expect(calls[2].result).toBe('Prompt retrieval failed: missing required arguments: city');
    expect(calls[3].result).toBe('Prompt retrieval failed: integrationId parameter is required');
    expect(calls[4].result).toBe('Prompt retrieval failed: promptName parameter is required');
    expect(calls[5].result).toMatch(/^Prompt retrieval failed: prompt no-such-prompt was not found on integration .*simple-prompt, args-prompt/);
    expect(calls[6].result).toBe('Prompt retrieval failed: integration int_elsewhere is not available to this agent');
    // A number argument is sent as the string MCP expects; the embedded text resource is shown inline.
    expect(calls[7].result).toMatch(/^Prompt: resource-prompt\n.*\n\nMessages:\n1\. User: This prompt includes the Text resource with id: 1\. .*\n2\. User: .+\n$/s);

    // The tool description tells the LLM each prompt and its arguments.
    const discovery = await getSnapshot<DiscoverySnapshot>(engine.db, runId, 'discovery');
    const description = await promptExecution.native!.describe({ deps: {} as ActivityDeps, threadId: 't', integrations: discovery?.integrations ?? [], hasDataSources: false });
    expect(description).toContain(`- ${everything.id} (name: ${everything.name}): prompts: simple-prompt - A prompt with no arguments;`);
    expect(description).toContain('args-prompt - A prompt with two arguments, one required and one optional [arguments: city (required), state]');

    // The prompt activity replays deterministically.
    const stack = testStack();
    const dir = fs.mkdtempSync(path.join(stack.tmpDir, 'prompt-history-'));
    const { stdout: history } = await run$(stack.temporalCliPath, [
      'workflow', 'show', '--address', stack.temporalAddress, '-w', runId, '--output', 'json',
    ], { maxBuffer: 64 * 1024 * 1024 });
    fs.writeFileSync(path.join(dir, 'prompt-run.json'), history);
    expect(history).toContain('retrievePrompt');
    const { stdout } = await run$(process.execPath, ['--import', 'tsx', 'test/support/replay-histories.ts', dir, stack.workflowBundlePath], { cwd: ROOT });
    expect(stdout.trim()).toBe('ok prompt-run.json');
  }, 180_000);

  test('conventional prompts of every kind, with mixed-case names, are injected once per run in the contract order', async () => {
    const countFile = path.join(testStack().tmpDir, `prompt-gets-${suffix()}`);
    const server = await promptsServer('all', { countFile });
    const { runId, result, prefix } = await run([server], [
      { toolCalls: [{ name: 'nope', arguments: {} }] },
      { toolCalls: [{ name: 'nope', arguments: {} }] },
      { text: 'done' },
    ], 'Be brief.');
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', turns: 3 });
    expect(prefix).toEqual([{ role: 'system', content: allSystem(server.name, 'Be brief.') }, ...ALL_AFTER_SYSTEM]);
    // Ten conventional prompts (the orphan call included), each fetched once for three turns; the others never.
    const gets = fs.readFileSync(countFile, 'utf8').trim().split('\n');
    expect(gets).toHaveLength(10);
    expect(gets).not.toContain('not_conventional');
    // The prefix counts in the run's size figures, next to its start.
    const started = (await listEvents(engine.db, runId)).find((e) => e.type === 'run_started');
    const { rows } = await engine.db.query<{ bytes: number }>("SELECT bytes FROM run_snapshots WHERE run_id = $1 AND kind = 'prefix'", [runId]);
    const tokens = prefix!.reduce((n, m) => n + estimated(m), 0);
    expect(started?.data.prefix).toEqual({ messageCount: 8, injectedPrompts: 9, bytes: rows[0].bytes, tokens, tokensEstimated: true });
    expect(rows[0].bytes).toBeGreaterThan(500);
  }, 120_000);

  test('two servers with a system_prompt each, and one whose prompts/get fails: joined in integration order, the failing one skipped', async () => {
    const first = await promptsServer('system', { label: 'alpha' });
    const broken = await promptsServer('get-fails');
    const second = await promptsServer('system', { label: 'beta' });
    const { result, prefix } = await run([first, broken, second], [{ text: 'ok' }], 'Answer in French.');
    expect(result).toMatchObject({ status: 'completed', output: 'ok' });
    expect(prefix).toEqual([{
      role: 'system',
      content: `[System instructions from Server: ${first.name}]\nInstructions of alpha.\n\n---\n\n`
        + `[System instructions from Server: ${second.name}]\nInstructions of beta.\n\n---\n\n[Thread System Prompt]\nAnswer in French.`,
    }]);
  }, 120_000);

  test('retrieve_mcp_prompt: a failing prompts/get and a multi-part prompt come back as text', async () => {
    const broken = await promptsServer('get-fails');
    const all = await promptsServer('all', { promptInjection: false });
    const { result, prefix } = await run([broken, all], [
      { toolCalls: [call({ integrationId: broken.name, promptName: 'user_prompt' }), call({ integrationId: all.id, promptName: 'multi_part' })] },
      { text: 'done' },
    ]);
    expect(prefix).toEqual([]);
    expect(result.toolCalls[0]).toMatchObject({ status: 'error', integrationId: broken.id });
    expect(result.toolCalls[0].result).toMatch(/^Prompt retrieval failed: .*the prompt store is offline/);
    expect(result.toolCalls[1].result).toBe('Prompt: multi_part\nDescription: Text, an image and an embedded resource\n\nMessages:\n'
      + '1. User: Look at this.\n2. Assistant: [image: image/png, 300 bytes]\n3. User: embedded notes\n');
  }, 120_000);

  test('per-integration settings: injection off, disabled prompts, and configured prompt arguments', async () => {
    const off = await promptsServer('system', { label: 'off', promptInjection: false });
    const muted = await promptsServer('system', { label: 'muted', disabledPrompts: ['SYSTEM_PROMPT'] });
    const needsArgs = await promptsServer('args');
    const withArgs = await promptsServer('args', { promptArguments: { user_prompt: { topic: 'tides' } } });
    const { prefix } = await run([off, muted, needsArgs, withArgs], [{ text: 'ok' }]);
    // Without its required argument a prompt is skipped, not the server: its assistant_prompt still comes.
    expect(prefix).toEqual([
      { role: 'user', content: 'Focus on tides.' },
      { role: 'assistant', content: 'Ready.' },
      { role: 'assistant', content: 'Ready.' },
    ]);
  }, 120_000);

  test('GET /v1/agents/:id/context previews the prefix without starting a run', async () => {
    const server = await promptsServer('all');
    const agent = await agentWith([server], [{ text: 'unused' }], 'Be brief.');
    const res = await app.inject({ method: 'GET', url: `/v1/agents/${agent.id}/context` });
    expect(res.statusCode).toBe(200);
    // The preview shows role, content, toolCalls and toolCallId, what each message came from, and its tokens.
    const prefix: ChatMessage[] = [{ role: 'system', content: allSystem(server.name, 'Be brief.') }, ...ALL_AFTER_SYSTEM];
    const prompt = (name: string) => ({ kind: 'prompt', integrationId: server.id, integrationName: server.name, prompt: name });
    const sources = [
      [prompt('System_Prompt'), prompt('TOOL_INSTRUCTIONS'), { kind: 'instructions' }],
      [prompt('user_prompt')], [prompt('USER_PROMPT')],
      [prompt('Tool_Call:Weather')], [prompt('tool_result:weather')], [prompt('tool_call:memory.index')], [prompt('TOOL_ANSWER:memory.index')],
      [prompt('Assistant_Prompt')],
    ];
    const expected = prefix.map((m, i) => ({
      ...(m.role === 'tool' ? { role: m.role, content: m.content, toolCallId: m.toolCallId } : m), sources: sources[i], tokens: estimated(m),
    }));
    const totalTokens = prefix.reduce((n, m) => n + estimated(m), 0);
    expect(res.json()).toEqual({ messages: expected, decisions: expect.any(Array), totalTokens, tokensEstimated: true, tokenizer: 'chars/4' });
    // Every conventional prompt listed has a decision; one the prefix could not use says why.
    const decisions = res.json().decisions as { prompt: string; injected: boolean; reason: string }[];
    expect(decisions.map((d) => d.prompt)).toEqual(['System_Prompt', 'TOOL_INSTRUCTIONS', 'user_prompt', 'USER_PROMPT', 'Assistant_Prompt',
      'Tool_Call:Weather', 'tool_result:weather', 'tool_call:memory.index', 'TOOL_ANSWER:memory.index', 'tool_call:orphan']);
    expect(decisions.find((d) => d.prompt === 'tool_call:orphan')).toMatchObject({ injected: false, reason: 'dropped: a tool_call without a tool_result' });
    expect(decisions.find((d) => d.prompt === 'System_Prompt')).toMatchObject({ injected: true, reason: 'system_prompt is always injected' });
    const { rows } = await engine.db.query('SELECT 1 FROM runs WHERE agent_id = $1', [agent.id]);
    expect(rows).toHaveLength(0);

    const plain = await agentWith([], [{ text: 'unused' }], 'Only this.');
    const plainRes = await app.inject({ method: 'GET', url: `/v1/agents/${plain.id}/context` });
    expect(plainRes.json()).toEqual({
      messages: [{ role: 'system', content: 'Only this.', sources: [{ kind: 'instructions' }], tokens: 3 }], decisions: [], totalTokens: 3, tokensEstimated: true, tokenizer: 'chars/4',
    });

    const missing = await app.inject({ method: 'GET', url: '/v1/agents/agt_missing/context' });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-type']).toContain('application/problem+json');
  }, 120_000);
});
