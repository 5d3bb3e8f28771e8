import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ScriptStep } from '../../core/agent-model';
import type { RunView } from '../../core/run-view';
import { syncAgentFiles } from '../../store/agent-files/sync';
import { startApiEngine, stopApiEngine } from '../support/api-engine';
import type { Engine } from '../support/engine';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

/**
 * An agent file's `callerTools` (docs/agents.md, Agent files and Caller tools): the default caller
 * tools of the file agent's runs, checked as the API checks an agent's; a bad declaration is a bad
 * file, reported by the sync, which keeps the file's last good version.
 */

const WAIT_MS = 60_000;
const suffix = () => randomUUID().slice(0, 8);

let engine: Engine;
let app: FastifyInstance;
let dir: string;
const inject = (options: InjectOptions) => app.inject(options);

beforeAll(async () => {
  ({ engine, app } = await startApiEngine());
  dir = path.join(testStack().tmpDir, `caller-tool-files-${suffix()}`);
  await mkdir(dir, { recursive: true });
});
afterAll(async () => {
  if (dir) {
    await rm(dir, { recursive: true, force: true });
    if (engine) await syncAgentFiles(engine.db, dir).catch(() => undefined);
  }
  await stopApiEngine({ engine, app });
});

const WEATHER = {
  name: 'get_weather', description: 'The weather in a city, as the caller knows it',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const fileText = (config: Record<string, unknown>, script: ScriptStep[] = [{ text: 'never' }]) =>
  `<!-- an agent whose caller runs a tool -->\n<config>\n${JSON.stringify({ model: { provider: 'scripted', script }, ...config })}\n</config>\n`;

async function writeAgent(name: string, config: Record<string, unknown>, script?: ScriptStep[]): Promise<string> {
  const file = path.join(dir, `${name}.chatmd`);
  await writeFile(file, fileText(config, script));
  return file;
}

const read = async (runId: string, waitMs = 0) => (await inject({ method: 'GET', url: `/v1/runs/${runId}?waitMs=${waitMs}` })).json<RunView>();

test('a file agent\'s callerTools are its runs\' default: a run waits for the caller\'s answer and completes with it', async () => {
  const name = `file_callers_${suffix()}`;
  await writeAgent(name, { callerTools: [WEATHER] }, [
    { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }, { text: '{{tool_results}}' },
  ]);
  const report = await syncAgentFiles(engine.db, dir);
  expect(report.errors.filter((e) => e.file.includes(name))).toEqual([]);
  expect(report.changed).toContain(name);
  expect((await inject({ method: 'GET', url: `/v1/agents/${name}` })).json().callerTools).toEqual([WEATHER]);

  const started = await inject({ method: 'POST', url: '/v1/runs', payload: { agentId: name, input: 'go' } });
  expect(started.statusCode).toBe(202);
  const runId = started.json().id as string;
  await waitFor(async () => (await read(runId)).pendingCallerTools.length === 1, WAIT_MS, 'the caller tool call pending');
  const [pending] = (await read(runId)).pendingCallerTools;
  expect([pending.toolCallId, pending.name, pending.arguments]).toEqual(['call_1_1', 'get_weather', { city: 'Paris' }]);
  const declared = await inject({ method: 'GET', url: `/v1/runs/${runId}/caller-tools` });
  expect(declared.json()).toEqual({ callerTools: [WEATHER], callerToolTimeout: '10m' });

  const answered = await inject({ method: 'POST', url: `/v1/runs/${runId}/tool-results/call_1_1`, payload: { content: 'sunny in Paris' } });
  expect(answered.statusCode).toBe(202);
  expect(await read(runId, 30_000)).toMatchObject({ status: 'completed', output: 'sunny in Paris' });
  expect((await read(runId)).toolCalls.map((c) => [c.type, c.status])).toEqual([['caller_tool', 'ok']]);

  // Taken out of the file, the agent has none again.
  await writeAgent(name, {});
  expect((await syncAgentFiles(engine.db, dir)).changed).toContain(name);
  expect((await inject({ method: 'GET', url: `/v1/agents/${name}` })).json().callerTools).toEqual([]);
}, 90_000);

test('a file whose callerTools the API would refuse is a bad file, reported with its line; its last good version stays', async () => {
  const fixture = await insertFixtureIntegration(engine.db, { name: `ffx${suffix()}` });
  const name = `file_bad_callers_${suffix()}`;
  const file = await writeAgent(name, { callerTools: [WEATHER] });
  expect((await syncAgentFiles(engine.db, dir)).changed).toContain(name);

  const errorOf = async (config: Record<string, unknown>) => {
    await writeAgent(name, config);
    const report = await syncAgentFiles(engine.db, dir);
    const errors = report.errors.filter((e) => e.file === file).map((e) => e.message);
    expect(errors).toHaveLength(1);
    return errors[0];
  };
  const remote = { ...WEATHER, name: 'remote', inputSchema: { type: 'object', properties: { a: { $ref: 'https://example.com/a.json' } } } };
  expect(await errorOf({ callerTools: [WEATHER, remote] })).toBe(`${file}:2: callerTools[1].inputSchema: /properties/a/$ref refers to `
    + 'https://example.com/a.json: only references within the schema ("#…") are allowed');
  const formatted = { ...WEATHER, inputSchema: { type: 'object', properties: { a: { type: 'string', format: 'colour' } } } };
  expect(await errorOf({ callerTools: [formatted] })).toMatch(/^.*:2: callerTools\[0\]\.inputSchema: \/properties\/a\/format "colour" is not a format/);
  const uncompilable = { ...WEATHER, inputSchema: { type: 'object', properties: { a: { type: 'strin' } } } };
  expect(await errorOf({ callerTools: [uncompilable] })).toMatch(/callerTools\[0\]\.inputSchema: it does not compile/);
  expect(await errorOf({ callerTools: [{ ...WEATHER, name: 'source_query' }] }))
    .toBe(`${file}:2: callerTools[0].name: source_query is a native tool of the run`);
  expect(await errorOf({ callerTools: [{ ...WEATHER, name: 'agent__helper' }] })).toMatch(/callerTools\[0\]\.name: agent__helper would be a sub-agent's tool/);
  expect(await errorOf({ integrations: [fixture.name], callerTools: [{ ...WEATHER, name: `${fixture.name}__echo` }] })).toBe(
    `${file}:2: callerTools[0].name: ${fixture.name}__echo would be a tool of the run's integration ${fixture.name} (its tools are ${fixture.name}__<tool>)`);
  // The shape, as the API's schema says it.
  expect(await errorOf({ callerTools: [WEATHER, WEATHER] })).toMatch(/invalid <config>: callerTools: must not declare a name twice/);
  expect(await errorOf({ callerTools: [{ ...WEATHER, name: 'has space' }] })).toMatch(/invalid <config>: callerTools\.0\.name: must be 1 to 64 letters/);
  const many = Array.from({ length: 33 }, (_, i) => ({ ...WEATHER, name: `t${i}` }));
  expect(await errorOf({ callerTools: many })).toMatch(/invalid <config>: callerTools: .*32/);
  const big = { ...WEATHER, inputSchema: { type: 'object', description: 'x'.repeat(16 * 1024) } };
  expect(await errorOf({ callerTools: [big] })).toMatch(/callerTools\.0\.inputSchema: must be at most 16384 bytes/);

  // None of it reached the agent: it keeps the file's last good version.
  expect((await inject({ method: 'GET', url: `/v1/agents/${name}` })).json()).toMatchObject({ callerTools: [WEATHER], integrationIds: [] });
}, 60_000);
