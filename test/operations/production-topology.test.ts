import fs from 'node:fs';
import path from 'node:path';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { freePort } from '../../platform/ports';
import { runSearchAttributeKeys, searchAttributeTypeName } from '../../core/search-attributes';
import { composeDescribe, composeEnv, composeService } from '../support/compose';
import { ROOT, exited, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';

composeDescribe('docker-compose.yml', (compose) => {
  const config = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    promisify(execFile)(compose[0], [...compose.slice(1), '-f', 'docker-compose.yml', 'config', ...args], { cwd: ROOT, env });
  // The defaults, whatever this shell sets.
  const env = { ...process.env, API_KEY: 'k'.repeat(32), SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'), TEMPORAL_VERSION: '', TEMPORAL_RETENTION: '' };
  let resolved: Promise<string> | undefined;
  const service = async (name: string) => composeService(await (resolved ??= config(env).then((r) => r.stdout)), name);
  const file = (relative: string) => fs.readFileSync(path.join(ROOT, relative), 'utf8');

  test('describes postgresql, Temporal (schema step, server, setup step, Web UI), the API and replicated workers', async () => {
    const { stdout } = await config(env, '--services');
    expect(stdout.trim().split('\n').sort()).toEqual(['api', 'postgresql', 'temporal', 'temporal-schema', 'temporal-setup', 'temporal-ui', 'worker']);
    const { stdout: full } = await config(env);
    expect(full).toMatch(/worker:[\s\S]*replicas: 2/);
    // Temporal no longer builds auto-setup: the server image, with its schema set up beforehand.
    const images = [...full.matchAll(/^\s+image: (\S+)$/gm)].map((m) => m[1]);
    expect(images.filter((image) => image.includes('auto-setup'))).toEqual([]);
    expect(images).toEqual(expect.arrayContaining([expect.stringMatching(/^temporalio\/server:/), expect.stringMatching(/^temporalio\/admin-tools:/)]));
  });

  test('migrates Temporal\'s schemas with the SQL tool (postgres12) of the server\'s version, before the server starts', async () => {
    const [schema, server] = [await service('temporal-schema'), await service('temporal')];
    const version = (block: string, image: string) => new RegExp(`image: ${image}:(\\S+)`).exec(block)?.[1];
    expect(version(server, 'temporalio/server')).toMatch(/^\d+\.\d+\.\d+$/);
    expect(version(schema, 'temporalio/admin-tools')).toBe(version(server, 'temporalio/server'));
    expect(schema).toMatch(/postgresql:\s+condition: service_healthy/);
    expect(server).toMatch(/temporal-schema:\s+condition: service_completed_successfully/);
    expect(schema).toContain('/etc/temporal/engine/setup-schema.sh');
    expect(schema).toContain(path.join(ROOT, 'deploy/temporal'));

    const script = file('deploy/temporal/setup-schema.sh');
    expect(script).toMatch(/temporal-sql-tool --plugin postgres12 /);
    for (const step of ['create-database', 'setup-schema -v 0.0', 'update-schema -d']) expect(script).toContain(step);
    expect(script).toContain('schemas=/etc/temporal/schema/postgresql/v12\n');
    expect(script).toMatch(/^migrate "\$\{DBNAME:-temporal\}" temporal\nmigrate "\$\{VISIBILITY_DBNAME:-temporal_visibility\}" visibility$/m);
    await promisify(execFile)('sh', ['-n', path.join(ROOT, 'deploy/temporal/setup-schema.sh')]);
  });

  test('the server reads the mounted dynamic config, which turns on Updates and Worker Deployments', async () => {
    const server = await service('temporal');
    expect(composeEnv(server, 'DB')).toBe('postgres12');
    const configPath = composeEnv(server, 'DYNAMIC_CONFIG_FILE_PATH')!;
    expect(path.posix.dirname(configPath)).toBe('/etc/temporal/config/dynamicconfig');
    expect(server).toContain(path.join(ROOT, 'deploy/temporal/dynamicconfig'));
    const dynamic = file(`deploy/temporal/dynamicconfig/${path.posix.basename(configPath)}`);
    for (const key of ['frontend.enableUpdateWorkflowExecution', 'system.enableDeploymentVersions', 'frontend.workerVersioningWorkflowAPIs']) {
      expect(dynamic).toMatch(new RegExp(`^${key.replaceAll('.', '\\.')}:\\n  - value: true$`, 'm'));
    }
  });

  test('the setup step creates the namespace and every search attribute the engine lists runs by, before the API and workers', async () => {
    const setup = await service('temporal-setup');
    expect(setup).toMatch(/temporal:\s+condition: service_healthy/);
    expect(setup).toContain('/etc/temporal/engine/setup-namespace.sh');
    expect(composeEnv(setup, 'TEMPORAL_NAMESPACE')).toBe('default');
    expect(composeEnv(setup, 'NAMESPACE_RETENTION')).toBe('7d');
    expect(composeEnv(setup, 'SEARCH_ATTRIBUTES')?.split(' ')).toEqual(runSearchAttributeKeys.map((k) => `${k.name}=${searchAttributeTypeName(k)}`));
    await promisify(execFile)('sh', ['-n', path.join(ROOT, 'deploy/temporal/setup-namespace.sh')]);
    for (const name of ['api', 'worker']) expect(await service(name)).toMatch(/temporal-setup:\s+condition: service_completed_successfully/);
  });

  test('publishes the Temporal Web UI, which has no login, on loopback only', async () => {
    const { stdout } = await config(env);
    // docker-compose 1.x prints the short form (127.0.0.1:8233:8080/tcp), Compose 2 the long one (host_ip: 127.0.0.1).
    expect(stdout).toMatch(/temporal-ui:[\s\S]*?ports:\s*\n\s*- (127\.0\.0\.1:8233:8080|[\s\S]{0,80}?host_ip: 127\.0\.0\.1)/);
  });

  test('refuses to start without API_KEY (its API listens on 0.0.0.0) or SECRETS_KEY', async () => {
    const stderrOf = async (unset: string) => ((await config({ ...env, [unset]: '' }).catch((e: unknown) => e)) as { stderr?: string }).stderr;
    expect(await stderrOf('API_KEY')).toMatch(/set API_KEY/);
    expect(await stderrOf('SECRETS_KEY')).toMatch(/set SECRETS_KEY/);
  });
});

/**
 * The topology of docker-compose.yml, without Docker: a separate API process, separate worker
 * processes, the machine's PostgreSQL and the Temporal server, each started as an operator would.
 */
describe('the production topology without Docker', () => {
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map(exited));
  });

  test('an API process and two worker processes serve a run against the machine PostgreSQL', async () => {
    const stack = testStack();
    const taskQueue = `topology-${randomUUID()}`;
    const port = await freePort();
    const env = { DATABASE_URL: stack.databases.external, TASK_QUEUE: taskQueue };
    // What `npm run api` runs; spawned directly so that SIGTERM reaches the server itself, as under an orchestrator.
    const api = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
      cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env, TEMPORAL_ADDRESS: stack.temporalAddress, PORT: String(port), LOG_LEVEL: 'warn' },
    });
    api.stderr?.on('data', () => undefined);
    children.push(api, spawnWorker(env), spawnWorker(env));
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 120_000, 'the API to be ready');

    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const agent = await post('/v1/agents', { name: `topology_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'served by separate processes' }] } });
    expect(agent.status).toBe(201);
    const thread = await post('/v1/threads', { agentId: agent.json.id });
    const run = await post(`/v1/threads/${thread.json.id}/runs`, { input: 'hello' });
    expect(run.status).toBe(202);
    const res = await fetch(`${base}/v1/runs/${run.json.id}?waitMs=30000`);
    expect(await res.json()).toMatchObject({ status: 'completed', output: 'served by separate processes' });
    // Workers yield the CPU to the API (WORKER_NICE, default 10); the API keeps the usual priority.
    const nice = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
    expect(children.map((c) => nice(c.pid!))).toEqual([0, 10, 10]);

    // SIGTERM is how an orchestrator stops them: each process shuts down cleanly and exits 0.
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
    expect(children.map((c) => c.exitCode)).toEqual([0, 0, 0]);
  }, 240_000);

  test('a worker stopped while it is still starting exits 0, having run nothing', async () => {
    const stack = testStack();
    const worker = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env, TEMPORAL_ADDRESS: stack.temporalAddress, WORKFLOW_BUNDLE_PATH: stack.workflowBundlePath,
        DATABASE_URL: stack.databases.external, TASK_QUEUE: `starting-${randomUUID()}`, LOG_LEVEL: 'info',
      },
    });
    children.push(worker);
    let log = '';
    worker.stderr!.on('data', (d: Buffer) => { log += d.toString(); });
    await waitFor(async () => log.includes('worker starting'), 60_000, 'the worker to begin its start-up');
    worker.kill('SIGTERM');
    await exited(worker);
    expect({ code: worker.exitCode, signal: worker.signalCode, log: worker.exitCode === 0 ? '' : log }).toEqual({ code: 0, signal: null, log: '' });
    expect(log).not.toContain('"worker started"');
    expect(log).toContain('worker stopped');
  }, 120_000);
});
