import { execFile, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../platform/ports';
import { runSearchAttributeKeys } from '../../core/search-attributes';
import { httpClient } from '../support/http-client';
import { startJwtIssuer, type JwtIssuer } from '../support/jwt-issuer';
import { exited, spawnApi, spawnWorker } from '../support/processes';
import { testStack } from '../support/stack-env';
import { clusterDescribe, startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster';
import { waitFor } from '../support/wait';

/**
 * The engine on a Temporal cluster with authorization, as production clusters (and Temporal Cloud)
 * have it: the engine's key may start and run workflows in its namespace (`default:write`) but not
 * change the namespace, so the operator service refuses it the search attributes (PermissionDenied).
 * The namespace comes without them. Until the operator adds them, nothing starts, and the API says
 * what to run; once they are there, runs start and end.
 */
clusterDescribe('the engine on a Temporal cluster whose authorization refuses it the search attributes', () => {
  let issuer: JwtIssuer;
  let cluster: TemporalCluster;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    issuer = await startJwtIssuer();
    cluster = await startTemporalCluster(path.join(testStack().tmpDir, `authorized-${randomUUID().slice(0, 8)}`), {
      authorization: { jwksUrl: issuer.jwksUrl, adminToken: issuer.token(['temporal-system:admin']) }, searchAttributes: false,
    });
  }, 180_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map(exited));
    await cluster?.stop();
    await issuer?.close();
  });

  test('/readyz and run starts answer 503 with the operator\'s command until the operator runs it; then runs start and end', async () => {
    const port = await freePort();
    // The engine's key, through the standard variables of @temporalio/envconfig (no TLS on this test server).
    const env = {
      DATABASE_URL: testStack().databases.external, TASK_QUEUE: `authorized-${randomUUID()}`, TEMPORAL_ADDRESS: cluster.address,
      TEMPORAL_API_KEY: issuer.token(['default:write']), TEMPORAL_TLS: 'false',
    };
    children.push(spawnApi({ ...env, PORT: String(port) }), spawnWorker(env));
    const api = httpClient(`http://127.0.0.1:${port}`);
    let ready: Awaited<ReturnType<typeof api.get>> | undefined;
    await waitFor(async () => {
      ready = await api.get('/readyz').catch(() => undefined);
      return (ready?.json.checks as Record<string, string> | undefined)?.workers === 'ok';
    }, 120_000, 'the API to answer and the worker to poll');
    const names = runSearchAttributeKeys.map((k) => k.name);
    const command = `temporal operator search-attribute create --namespace default ${names.map((n) => `--name ${n} --type Keyword`).join(' ')}`;
    expect(ready).toMatchObject({ status: 503, json: { checks: { temporal: 'ok', searchAttributes: 'missing' } } });
    expect(ready!.json.detail).toContain(command);

    const agent = await api.post('/v1/agents', { name: `authorized_${randomUUID().slice(0, 8)}`, model: { provider: 'scripted', script: [{ text: 'started at last' }] } });
    const refused = await api.post('/v1/runs', { agentId: agent.json.id, input: 'go' });
    expect(refused).toMatchObject({ status: 503, type: expect.stringContaining('application/problem+json'), json: { code: 'search_attributes_missing' } });
    expect(refused.json.detail).toContain(command);

    // The operator, whose key may change the namespace, runs the command the API gave.
    const [temporal, ...args] = command.split(' ');
    expect(temporal).toBe('temporal');
    await promisify(execFile)(testStack().temporalCliPath, [
      ...args, '--address', cluster.address, '--api-key', issuer.token(['temporal-system:admin']), '--tls=false',
    ]);
    // Known missing, so each probe looks again: ready once they are there.
    await waitFor(async () => (await api.get('/readyz')).status === 200, 60_000, '/readyz to answer 200');
    const run = await api.post('/v1/runs', { agentId: agent.json.id, input: 'go' });
    expect(run.status).toBe(202);
    expect((await api.get(`/v1/runs/${run.json.id}?waitMs=30000`)).json).toMatchObject({ status: 'completed', output: 'started at last' });
  }, 300_000);
});
