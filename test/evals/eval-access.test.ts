import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';

/*
 * Evals are tenant-scoped from the start: another tenant's run, thread or eval id answers as an
 * unknown one; starting one needs the role run (reading, read); a model's endpoint is the
 * operator's; a request's mistakes are 400s naming the field.
 */

const API_KEY = `api-${randomUUID()}`;
const ADMIN_KEY = `admin-${randomUUID()}`;
const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

let h: ApiEngine;
beforeAll(async () => {
  h = await startApiEngine('embedded', { rateLimitPerMinute: 0, apiKey: API_KEY, adminApiKey: ADMIN_KEY });
});
afterAll(async () => {
  await stopApiEngine(h);
});

type Send = (options: InjectOptions) => Promise<LightMyRequestResponse>;
const as = (key: string, headers: Record<string, string> = {}): Send => (options) =>
  h.app.inject({ ...options, headers: { ...options.headers, ...headers, authorization: `Bearer ${key}` } });
const admin = as(ADMIN_KEY);

interface Tenant { id: string; send: Send; reader: Send }

async function newTenant(): Promise<Tenant> {
  const tenant = (await admin({ method: 'POST', url: '/v1/tenants', payload: { name: unique('t') } })).json<{ id: string }>();
  const key = async (roles: string[]) =>
    (await admin({ method: 'POST', url: '/v1/keys', payload: { tenantId: tenant.id, name: unique('k'), roles } })).json<{ key: string }>().key;
  return { id: tenant.id, send: as(await key(['read', 'run', 'decide', 'manage'])), reader: as(await key(['read'])) };
}

/** A run of the tenant that has ended, on a thread of its own. */
async function endedRun(t: Tenant): Promise<{ runId: string; threadId: string }> {
  const agent = await t.send({ method: 'POST', url: '/v1/agents', payload: { name: unique('a'), model: { provider: 'scripted', script: [{ text: 'hi' }] } } });
  const run = await t.send({ method: 'POST', url: '/v1/runs', payload: { agentId: agent.json().id, input: 'hello' } });
  const { id: runId, threadId } = run.json<{ id: string; threadId: string }>();
  const ended = await t.send({ method: 'GET', url: `/v1/runs/${runId}?waitMs=20000` });
  expect(ended.json()).toMatchObject({ status: 'completed' });
  return { runId, threadId };
}

/** What `other` answers next to an unknown id, each replaced by REF. */
async function expectAsUnknown(send: Send, request: (ref: string) => InjectOptions, other: string): Promise<void> {
  const unknown = `run_${randomUUID().replace(/-/g, '')}`;
  const [theirs, none] = [await send(request(other)), await send(request(unknown))];
  expect({ status: theirs.statusCode, body: theirs.body.replaceAll(other, 'REF') })
    .toEqual({ status: none.statusCode, body: none.body.replaceAll(unknown, 'REF') });
  expect(theirs.statusCode).toBe(404);
}

const evalBody = (over: Record<string, unknown>) => ({ name: 'access', tools: 'recorded', ...over });

describe('evals across tenants and roles', () => {
  let a: Tenant;
  let b: Tenant;
  let run: { runId: string; threadId: string };
  let evalId: string;
  beforeAll(async () => {
    [a, b] = [await newTenant(), await newTenant()];
    run = await endedRun(a);
  });
  afterAll(async () => {
    // The eval's workflow may still replay; it is the tenant's to cancel, this test's to end.
    if (evalId) await h.engine.client.workflow.getHandle(evalId).terminate('test over').catch(() => undefined);
  });

  test('another tenant\'s run or thread answers as an unknown one', async () => {
    await expectAsUnknown(b.send, (ref) => ({ method: 'POST', url: '/v1/evals', payload: evalBody({ runIds: [ref] }) }), run.runId);
    await expectAsUnknown(b.send, (ref) => ({ method: 'POST', url: '/v1/evals', payload: evalBody({ threadIds: [ref] }) }), run.threadId);
  });

  test('starting one needs the role run; a model\'s endpoint is the operator\'s', async () => {
    const read = await a.reader({ method: 'POST', url: '/v1/evals', payload: evalBody({ runIds: [run.runId] }) });
    expect(read.json()).toMatchObject({ status: 403, code: 'forbidden', role: 'run' });
    const model = { provider: 'openai', name: 'gpt', baseUrl: 'https://llm.example.com/v1' };
    const endpoint = await a.send({ method: 'POST', url: '/v1/evals', payload: evalBody({ runIds: [run.runId], model }) });
    expect(endpoint.json()).toMatchObject({ status: 403, code: 'admin_required', field: 'body.model.baseUrl' });
  });

  test('a request\'s mistakes are 400s naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [evalBody({ runIds: [run.runId], threadIds: [run.threadId] }), 'body.runIds'],
      [evalBody({ runIds: [run.runId], expect: { outputMatches: '(unclosed' } }), 'body.expect.outputMatches'],
      [evalBody({ runIds: [run.runId], expectByRun: { run_other: { maxTurns: 1 } } }), 'body.expectByRun.run_other'],
      [evalBody({ runIds: [run.runId], tools: 'sometimes' }), 'body.tools'],
    ];
    for (const [payload, field] of cases) {
      const res = await a.send({ method: 'POST', url: '/v1/evals', payload });
      expect({ status: res.statusCode, field: res.json().field }).toEqual({ status: 400, field });
    }
  });

  test('an eval is read, listed and cancelled by its tenant only', async () => {
    const started = await a.send({ method: 'POST', url: '/v1/evals', payload: evalBody({ runIds: [run.runId] }) });
    expect(started.statusCode).toBe(202);
    evalId = started.json().id;
    expect(started.json()).toEqual({ id: evalId, status: 'running' });
    const read = await a.reader({ method: 'GET', url: `/v1/evals/${evalId}` });
    expect(read.json()).toMatchObject({ id: evalId, name: 'access', tools: 'recorded', totals: { runs: 1 }, runs: [{ runId: run.runId }] });
    expect((await a.reader({ method: 'GET', url: '/v1/evals' })).json().evals.map((e: { id: string }) => e.id)).toEqual([evalId]);
    expect((await b.send({ method: 'GET', url: '/v1/evals' })).json().evals).toEqual([]);
    await expectAsUnknown(b.send, (ref) => ({ method: 'GET', url: `/v1/evals/${ref}` }), evalId);
    await expectAsUnknown(b.send, (ref) => ({ method: 'POST', url: `/v1/evals/${ref}/cancel` }), evalId);
    expect((await a.reader({ method: 'POST', url: `/v1/evals/${evalId}/cancel` })).statusCode).toBe(403);
  });

  test('an eval whose workflow was terminated from outside ends cancelled when cancelled', async () => {
    const started = await a.send({ method: 'POST', url: '/v1/evals', payload: evalBody({ name: 'terminated', runIds: [run.runId] }) });
    const id: string = started.json().id;
    await h.engine.client.workflow.getHandle(id).terminate('an operator ended it');
    const cancelled = await a.send({ method: 'POST', url: `/v1/evals/${id}/cancel` });
    expect(cancelled.json()).toEqual({ id, status: 'cancelled' });
    expect((await a.send({ method: 'GET', url: `/v1/evals/${id}` })).json()).toMatchObject({ status: 'cancelled' });
  });
});
