import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../platform/ports';
import type { BenchInfra } from './bench-stack';
import { ROOT, startNode, waitUntil, type Child } from './load-processes';

/**
 * The engine's API and worker as the production image runs them (`npm run build`, then
 * `node dist/api/server.js` and `node dist/worker/main.js`), on a bench's servers: shared by
 * `npm run bench:load` and `npm run bench:capacity`, with the fixture MCP server's integration and
 * the scripted run shapes both drive.
 */

export type Json = Record<string, unknown>;

export const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts');

export interface Api { url: string; post(p: string, body: Json): Promise<Json>; get(p: string): Promise<{ status: number; body: Json }> }

export function apiAt(url: string): Api {
  return {
    url,
    async post(p, body) {
      const res = await fetch(`${url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as Json;
      if (res.status >= 300) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    },
    async get(p) {
      const res = await fetch(`${url}${p}`);
      return { status: res.status, body: (await res.json()) as Json };
    },
  };
}

export interface EngineProcessOptions {
  taskQueue: string;
  /** false: the caller built the engine already (buildEngine), for a second pair of processes */
  build?: boolean;
  /** the API's AGENTS_DIR (created here); default the bench's tmpDir/agents */
  agentsDir?: string;
  /** put before each process's name in messages ("metrics on: API") */
  label?: string;
  /** MALLOC_ARENA_MAX=2 as the production image sets it (Dockerfile); false leaves glibc's default */
  arenas?: boolean;
  apiNodeArgs?: string[];
  workerNodeArgs?: string[];
  /** more environment for one process (beside DATABASE_URL, TEMPORAL_ADDRESS, TASK_QUEUE, LOG_LEVEL) */
  apiEnv?: Record<string, string>;
  workerEnv?: Record<string, string>;
}

export interface EngineProcesses {
  api: Api;
  apiProcess: Child;
  worker: Child;
}

/**
 * Builds the engine, starts its API and worker (pushed onto `children` as they start, for the
 * caller to stop, even when this fails later) and waits until the API answers /healthz.
 */
export async function startEngineProcesses(infra: BenchInfra, options: EngineProcessOptions, children: Child[]): Promise<EngineProcesses> {
  if (options.build !== false) buildEngine();
  const agentsDir = options.agentsDir ?? path.join(infra.tmpDir, 'agents');
  await fs.mkdir(agentsDir, { recursive: true });
  const prefix = options.label ? `${options.label}: ` : '';
  const port = await freePort();
  const arenas: Record<string, string> = options.arenas === false ? {} : { MALLOC_ARENA_MAX: '2' };
  const common = { DATABASE_URL: infra.databaseUrl, TEMPORAL_ADDRESS: infra.temporalAddress, TASK_QUEUE: options.taskQueue, LOG_LEVEL: 'warn', ...arenas };
  const apiProcess = startNode(`${prefix}API`, 'api/server.ts', {
    env: { ...common, HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_PER_MINUTE: '0', AGENTS_DIR: agentsDir, ...options.apiEnv },
    nodeArgs: options.apiNodeArgs,
  });
  children.push(apiProcess);
  const worker = startNode(`${prefix}worker`, 'worker/main.ts', {
    env: { ...common, WORKFLOW_BUNDLE_PATH: path.join(ROOT, 'dist', 'workflow-bundle.js'), ...options.workerEnv },
    nodeArgs: options.workerNodeArgs,
  });
  children.push(worker);
  const api = apiAt(`http://127.0.0.1:${port}`);
  await waitUntil(`the ${prefix}API`, async () => (await api.get('/healthz')).status === 200, children);
  return { api, apiProcess, worker };
}

/** `npm run build`: the API and the worker run from the build, as the production image runs them (Dockerfile). */
export function buildEngine(): void {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
}

/** The fixture MCP server (stdio) as an integration named `name`, through the API; `extra` adds fields (an approval policy). */
export async function fixtureIntegration(api: Api, name: string, extra: Json = {}): Promise<Json> {
  return api.post('/v1/integrations', {
    name, transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT }, ...extra,
  });
}

/** A script whose run makes `shape[t]` echo calls of `integration` in turn t+1, then answers with the last turn's results. */
export function echoScript(integration: string, shape: number[]) {
  return [
    ...shape.map((calls, t) => ({
      toolCalls: Array.from({ length: calls }, (_, i) => ({ name: `${integration}__echo`, arguments: { text: `t${t + 1}.${i}` } })),
    })),
    { text: '{{tool_results}}' },
  ];
}

/** What a run of echoScript(…, shape) answers. */
export const echoOutput = (shape: number[]) => Array.from({ length: shape.at(-1)! }, (_, i) => `echo: t${shape.length}.${i}`).join('\n');
