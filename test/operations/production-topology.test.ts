import fs from 'node:fs';
import path from 'node:path';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { freePort } from '../../platform/ports';
import { idempotentThreadId } from '../../platform/ids';
import { runSearchAttributeKeys, searchAttributeTypeName } from '../../core/search-attributes';
import { composeDescribe, composeEnv, composeService } from '../support/compose';
import { ROOT, exited, spawnApi, spawnWorker } from '../support/processes';
import { httpClient as client } from '../support/http-client';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { startBareTemporal, type BareTemporal } from '../support/bare-temporal';
import { Client as McpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

composeDescribe('docker-compose.yml', (compose) => {
  const config = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    promisify(execFile)(compose[0], [...compose.slice(1), '-f', 'docker-compose.yml', 'config', ...args], { cwd: ROOT, env });
  // The defaults, whatever this shell sets.
  const env = {
    ...process.env, API_KEY: 'k'.repeat(32), SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'), METRICS_TOKEN: 'm'.repeat(24),
    TEMPORAL_VERSION: '', TEMPORAL_RETENTION: '', PROMETHEUS_RETENTION: '', GRAFANA_ADMIN_PASSWORD: '',
  };
  let resolved: Promise<string> | undefined;
  const service = async (name: string) => composeService(await (resolved ??= config(env).then((r) => r.stdout)), name);
  const file = (relative: string) => fs.readFileSync(path.join(ROOT, relative), 'utf8');

  test('describes postgresql, Temporal (schema step, server, setup step, Web UI), the API, replicated workers, Prometheus and Grafana', async () => {
    const { stdout } = await config(env, '--services');
    expect(stdout.trim().split('\n').sort()).toEqual([
      'api', 'grafana', 'postgresql', 'prometheus', 'temporal', 'temporal-schema', 'temporal-setup', 'temporal-ui', 'worker',
    ]);
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

  test('refuses to start without API_KEY (its API listens on 0.0.0.0), SECRETS_KEY or METRICS_TOKEN (metrics off loopback)', async () => {
    const stderrOf = async (unset: string) => ((await config({ ...env, [unset]: '' }).catch((e: unknown) => e)) as { stderr?: string }).stderr;
    expect(await stderrOf('API_KEY')).toMatch(/set API_KEY/);
    expect(await stderrOf('SECRETS_KEY')).toMatch(/set SECRETS_KEY/);
    expect(await stderrOf('METRICS_TOKEN')).toMatch(/set METRICS_TOKEN/);
  });

  test('Prometheus scrapes the API and the workers on the ports they serve metrics on, with their token, and evaluates the alerts', async () => {
    const [api, worker, prometheus] = [await service('api'), await service('worker'), await service('prometheus')];
    for (const block of [api, worker]) {
      expect(composeEnv(block, 'METRICS_HOST')).toBe('0.0.0.0');
      expect(composeEnv(block, 'METRICS_TOKEN')).toBe(env.METRICS_TOKEN);
    }
    const promConfig = file('deploy/prometheus/prometheus.yml');
    // Each job's port: the API's and the workers' METRICS_PORT, the workers' Temporal SDK port.
    const jobPort = (job: string) => new RegExp(`job_name: ${job}\\n[\\s\\S]*?(?:targets: \\['api:|port: )(\\d+)`).exec(promConfig)?.[1];
    expect(jobPort('agent-engine-api')).toBe(composeEnv(api, 'METRICS_PORT'));
    expect(jobPort('agent-engine-worker')).toBe(composeEnv(worker, 'METRICS_PORT'));
    expect(jobPort('agent-engine-temporal-sdk')).toBe(composeEnv(worker, 'TEMPORAL_METRICS_PORT'));
    expect(promConfig).toMatch(/^rule_files:\n {2}- alerts\.yml$/m);
    // The token, from the same variable, as the file the configuration names.
    expect(composeEnv(prometheus, 'METRICS_TOKEN')).toBe(env.METRICS_TOKEN);
    const tokenFile = /credentials_file: (\S+)/.exec(promConfig)![1];
    expect(prometheus).toContain(`> ${tokenFile}`);
    const jobs = promConfig.split(/^ {2}- job_name: /m).slice(1);
    expect(jobs).toHaveLength(3);
    for (const job of jobs) expect(job).toContain(`credentials_file: ${tokenFile}`);
    const configFile = /--config\.file=(\S+)/.exec(prometheus)![1];
    expect(prometheus).toContain(`${path.join(ROOT, 'deploy/prometheus')}:${path.posix.dirname(configFile)}:ro`);
    expect(path.posix.basename(configFile)).toBe('prometheus.yml');
  });

  test('Grafana is provisioned with the Prometheus and the dashboard; both have no login of their own and are published on loopback only', async () => {
    const grafana = await service('grafana');
    expect(grafana).toContain(`${path.join(ROOT, 'deploy/grafana/provisioning')}:/etc/grafana/provisioning:ro`);
    expect(composeEnv(grafana, 'GF_AUTH_ANONYMOUS_ORG_ROLE')).toBe('Viewer');
    expect(composeEnv(grafana, 'GF_SECURITY_ADMIN_PASSWORD')).toBe('admin');
    for (const name of ['prometheus', 'grafana']) {
      expect(await service(name)).toMatch(/ports:\s*\n\s*- (127\.0\.0\.1:\d+:\d+|[\s\S]{0,80}?host_ip: 127\.0\.0\.1)/);
    }
  });
});

/**
 * The topology of docker-compose.yml, without Docker: a separate API process, separate worker
 * processes, the machine's PostgreSQL and a Temporal server, each started as an operator would.
 * The Temporal server is one of its own, as a cluster comes: without the engine's search attributes.
 */
describe('the production topology without Docker', () => {
  const children: ChildProcess[] = [];
  const servers: BareTemporal[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map(exited));
    await Promise.all(servers.map((s) => s.stop()));
  });

  const engineAttributes = runSearchAttributeKeys.map((k) => k.name);

  test('an API process and two worker processes serve a run against the machine PostgreSQL, on a Temporal server they gave the search attributes', async () => {
    const temporal = await startBareTemporal();
    servers.push(temporal);
    expect(Object.keys(await temporal.customAttributes())).toEqual([]);
    const stack = testStack();
    const taskQueue = `topology-${randomUUID()}`;
    const port = await freePort();
    const env = { DATABASE_URL: stack.databases.external, TASK_QUEUE: taskQueue, TEMPORAL_ADDRESS: temporal.address };
    children.push(spawnApi({ ...env, PORT: String(port) }), spawnWorker(env), spawnWorker(env));
    const base = `http://127.0.0.1:${port}`;
    const api = client(base);
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 120_000, 'the API to be ready');
    // Registered by the engine itself, each with its type (IndexedValueType KEYWORD = 2).
    expect(await temporal.customAttributes()).toEqual(Object.fromEntries(runSearchAttributeKeys.map((k) => [k.name, 2])));
    expect(runSearchAttributeKeys.map(searchAttributeTypeName)).toEqual(engineAttributes.map(() => 'Keyword'));

    const agent = await api.post('/v1/agents', { name: `topology_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'served by separate processes' }] } });
    expect(agent.status).toBe(201);
    const thread = await api.post('/v1/threads', { agentId: agent.json.id });
    const run = await api.post(`/v1/threads/${thread.json.id}/runs`, { input: 'hello' });
    expect(run.status).toBe(202);
    expect((await api.get(`/v1/runs/${run.json.id}?waitMs=30000`)).json).toMatchObject({ status: 'completed', output: 'served by separate processes' });
    // Listed by the attributes the engine registered.
    expect((await api.get(`/v1/runs?threadId=${thread.json.id}`)).json).toMatchObject({ runs: [{ id: run.json.id, status: 'completed' }] });

    // An operator removes one: the API, which knew them present, notices at the next start and adds it again.
    await promisify(execFile)(stack.temporalCliPath, ['operator', 'search-attribute', 'remove', '--address', temporal.address, '--namespace', 'default', '--name', 'agentId', '--yes']);
    expect(await temporal.customAttributes()).not.toHaveProperty('agentId');
    const next = await api.post(`/v1/threads/${thread.json.id}/runs`, { input: 'again' });
    expect(next.status).toBe(202);
    expect(await temporal.customAttributes()).toHaveProperty('agentId', 2);
    expect((await api.get(`/v1/runs/${next.json.id}?waitMs=30000`)).json).toMatchObject({ status: 'completed' });
    // Workers yield the CPU to the API (WORKER_NICE, default 10); the API keeps the usual priority.
    const nice = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
    expect(children.map((c) => nice(c.pid!))).toEqual([0, 10, 10]);

    // SIGTERM is how an orchestrator stops them: each process shuts down cleanly and exits 0.
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map(exited));
    expect(children.map((c) => c.exitCode)).toEqual([0, 0, 0]);
  }, 240_000);

  test('where Temporal refuses the engine its search attributes, /readyz and every run start answer 503 naming them and the command that adds them', async () => {
    // A namespace whose ten Keyword attributes (all a SQL store has) other applications took: the
    // operator service refuses the engine's, as Temporal Cloud refuses any (PermissionDenied).
    const temporal = await startBareTemporal(Array.from({ length: 10 }, (_, i) => `otherApp${i}=Keyword`));
    servers.push(temporal);
    const stack = testStack();
    const port = await freePort();
    const env = { DATABASE_URL: stack.databases.external, TASK_QUEUE: `refused-${randomUUID()}`, TEMPORAL_ADDRESS: temporal.address };
    const [apiProcess, worker] = [spawnApi({ ...env, PORT: String(port) }), spawnWorker(env)];
    children.push(apiProcess, worker);
    const base = `http://127.0.0.1:${port}`;
    const api = client(base);
    // Ready but for the attributes: the database and Temporal answer, and the worker (which started all the same) polls.
    let ready: Awaited<ReturnType<typeof api.get>> | undefined;
    await waitFor(async () => {
      ready = await api.get('/readyz').catch(() => undefined);
      return (ready?.json.checks as Record<string, string> | undefined)?.workers === 'ok';
    }, 120_000, 'the API to answer and the worker to poll');
    const command = `temporal operator search-attribute create --namespace default ${engineAttributes.map((n) => `--name ${n} --type Keyword`).join(' ')}`;
    expect(ready).toMatchObject({ status: 503, json: { code: 'not_ready', checks: { database: 'ok', temporal: 'ok', workers: 'ok', searchAttributes: 'missing' } } });
    const detail = String(ready!.json.detail);
    expect(detail).toContain(command);
    for (const name of engineAttributes) expect(detail).toContain(name);

    const agent = await api.post('/v1/agents', { name: `refused_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'never' }] } });
    expect(agent.status).toBe(201);
    const thread = await api.post('/v1/threads', { agentId: agent.json.id });
    const oneShotKey = randomUUID();
    const starts = [
      await api.post('/v1/runs', { agentId: agent.json.id, input: 'one-shot' }),
      await api.post('/v1/runs', { agentId: agent.json.id, input: 'one-shot, idempotent' }, { 'idempotency-key': oneShotKey }),
      await api.post(`/v1/threads/${thread.json.id}/runs`, { input: 'on a thread' }),
      await api.post(`/v1/threads/${thread.json.id}/runs`, { input: 'on a thread, idempotent' }, { 'idempotency-key': randomUUID() }),
    ];
    for (const start of starts) {
      expect(start).toMatchObject({ status: 503, type: expect.stringContaining('application/problem+json'), json: { code: 'search_attributes_missing' } });
      expect(start.json.detail).toContain(command);
      expect(detail).toContain(String(start.json.detail));
    }
    // Nothing left behind but the threads there were: the agent's, and the idempotent one-shot's (its retry comes back to it).
    const threads = ((await api.get(`/v1/threads?agentId=${agent.json.id}`)).json.threads as { id: string }[]).map((t) => t.id);
    expect(threads.sort()).toEqual([thread.json.id, idempotentThreadId(oneShotKey)].sort());
    // The agent as an MCP tool (/mcp) answers a tool error with the same text.
    const mcp = new McpClient({ name: 'topology-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    try {
      const called = await mcp.callTool({ name: String(agent.json.name), arguments: { input: 'over MCP' } });
      expect(called).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringContaining(command) }] });
    } finally {
      await mcp.close();
    }
    expect(await temporal.customAttributes()).not.toHaveProperty('agentId');
    expect(worker.exitCode).toBeNull();
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
