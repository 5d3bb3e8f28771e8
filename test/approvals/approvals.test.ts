import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { ScriptStep } from '../../core/agent-model';
import { approvalText, type ApprovalPolicy } from '../../core/approval';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { type Integration } from '../../core/integration';
import { listEvents } from '../../store/runs/events';
import { releasable } from '../../use-cases/runs/follow-events';
import { EventCursor } from '../../use-cases/runs/event-cursor';
import { insertThread } from '../../store/threads/threads';
import { startApiEngine, stopApiEngine, type ApiEngine } from '../support/api-engine';
import { testStack } from '../support/stack-env';
import { waitFor } from '../support/wait';
import { listedAsWaiting } from '../support/waiting-list';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const suffix = () => randomUUID().slice(0, 8);
/** Generous: the machine running the tests is shared and slow. */
const WAIT_MS = 60_000;

interface RunBody {
  status: string;
  output: string | null;
  toolCalls: { id: string; name: string; status: string; result: string }[];
  pendingApprovals: { toolCallId: string; turn: number; name: string; integrationId: string | null; arguments: unknown; requestedAt: string; expiresAt: string }[];
}

describe('approval of tool calls', () => {
  let api: ApiEngine;
  let countFile: string;

  const integration = (approval: ApprovalPolicy | null, extra: { trustAnnotations?: boolean } = {}) => insertIntegration(api.engine.db, {
    name: `fx-${suffix()}`,
    transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, env: { COUNT_FILE: countFile } },
    approval, ...extra,
  });

  async function start(integrations: Integration[], script: ScriptStep[]): Promise<string> {
    const agent = await insertAgent(api.engine.db, {
      name: `agent-${randomUUID()}`, model: { provider: 'scripted', script }, integrationIds: integrations.map((i) => i.id),
    });
    const thread = await insertThread(api.engine.db, agent.id);
    return api.engine.start({ threadId: thread.id, input: 'go' });
  }

  const read = async (runId: string) => (await api.app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<RunBody>();
  const decide = (runId: string, toolCallId: string, body: Record<string, unknown>) =>
    api.app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${encodeURIComponent(toolCallId)}`, payload: body });

  async function pendingOf(runId: string, count = 1): Promise<RunBody['pendingApprovals']> {
    let run: RunBody | undefined;
    await waitFor(async () => ((run = await read(runId)).pendingApprovals.length >= count), WAIT_MS, `${count} pending approval(s) of ${runId}`);
    return run!.pendingApprovals;
  }

  beforeAll(async () => {
    api = await startApiEngine();
    countFile = path.join(testStack().tmpDir, `approval-count-${suffix()}`);
  });
  afterAll(async () => {
    await stopApiEngine(api);
  });

  test('an approved call runs; while it waits the run is running, lists its pending approval, and is listed by waiting=true', async () => {
    const fx = await integration({ default: 'always' });
    const runId = await start([fx], [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'hi' } }] }, { text: '{{tool_results}}' }]);
    const [pending] = await pendingOf(runId);
    expect(pending).toMatchObject({ toolCallId: 'call_1_1', turn: 1, name: `${fx.name}__echo`, integrationId: fx.id, arguments: { text: 'hi' } });
    expect(Date.parse(pending.expiresAt) - Date.parse(pending.requestedAt)).toBe(24 * 3_600_000);
    expect((await read(runId)).status).toBe('running');

    await waitFor(() => listedAsWaiting(api.app, runId), WAIT_MS, 'the run listed as waiting');

    const decided = await decide(runId, 'call_1_1', { decision: 'approve' });
    expect(decided.statusCode).toBe(200);
    expect(decided.json<RunBody>().pendingApprovals).toEqual([]);

    const result = await api.engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', output: 'echo: hi' });
    const events = await listEvents(api.engine.db, runId);
    expect(events.find((e) => e.type === 'approval_requested')?.data).toMatchObject({ toolCallId: 'call_1_1', name: `${fx.name}__echo` });
    expect(events.find((e) => e.type === 'approval_resolved')?.data).toMatchObject({ decision: 'approve', status: 'approved', by: 'api', keyKind: 'none' });
    const types = events.map((e) => e.type);
    expect(types.indexOf('approval_resolved')).toBeLessThan(types.indexOf('tool_call_started'));

    await waitFor(async () => !(await listedAsWaiting(api.app, runId)), WAIT_MS, 'the run no longer listed as waiting');

    // A decided call is a conflict that names the decision; an unknown call or run is a 404.
    const again = await decide(runId, 'call_1_1', { decision: 'deny' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'already_decided', decision: 'approve', approvalStatus: 'approved' });
    expect((await decide(runId, 'call_9_9', { decision: 'approve' })).statusCode).toBe(404);
    expect((await decide('run_nope', 'call_1_1', { decision: 'approve' })).statusCode).toBe(404);
  });

  test('a denied call answers the LLM with the reviewer\'s reason, or without one the plain text; the run goes on', async () => {
    const fx = await integration({ default: 'always' });
    const runId = await start([fx], [
      { toolCalls: [{ name: `${fx.name}__count`, arguments: {} }, { name: `${fx.name}__count`, arguments: {} }] },
      { text: '{{tool_results}}' },
    ]);
    await pendingOf(runId, 2);
    expect((await decide(runId, 'call_1_1', { decision: 'deny', reason: 'not on a Friday' })).statusCode).toBe(200);
    expect((await decide(runId, 'call_1_2', { decision: 'deny' })).statusCode).toBe(200);
    const result = await api.engine.result(runId);
    expect(result.output).toBe(`${approvalText.denied('not on a Friday')}\n${approvalText.denied()}`);
    expect(approvalText.denied('x')).toBe('Tool call denied by a reviewer: x');
    expect(approvalText.denied()).toBe('Tool call denied by a reviewer.');
    expect(result.toolCalls.map((c) => c.status)).toEqual(['error', 'error']);
    const resolved = (await listEvents(api.engine.db, runId)).filter((e) => e.type === 'approval_resolved').map((e) => e.data);
    expect(resolved).toEqual(expect.arrayContaining([
      expect.objectContaining({ toolCallId: 'call_1_1', decision: 'deny', reason: 'not on a Friday', by: 'api' }),
      expect.objectContaining({ toolCallId: 'call_1_2', decision: 'deny', reason: null, by: 'api' }),
    ]));
  });

  test('a call nobody decides is answered "not approved" when its timeout passes', async () => {
    const fx = await integration({ default: 'always', timeout: '2s' });
    const runId = await start([fx], [{ toolCalls: [{ name: `${fx.name}__count`, arguments: {} }] }, { text: '{{tool_results}}' }]);
    const result = await api.engine.result(runId);
    expect(result.output).toBe('Tool call not approved within 2s.');
    const resolved = (await listEvents(api.engine.db, runId)).find((e) => e.type === 'approval_resolved')?.data;
    expect(resolved).toMatchObject({ status: 'timed_out', decision: null, by: 'timeout' });
    const late = await decide(runId, 'call_1_1', { decision: 'approve' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ approvalStatus: 'timed_out', decision: null });
  });

  test('in one turn, a call that needs no approval runs at once while another waits; the LLM gets both results', async () => {
    // unless_read_only with trusted annotations: echo (readOnlyHint) runs, count asks.
    const fx = await integration({ default: 'unless_read_only' }, { trustAnnotations: true });
    const runId = await start([fx], [
      { toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'now' } }, { name: `${fx.name}__count`, arguments: {} }] },
      { text: '{{tool_results}}' },
    ]);
    await waitFor(async () => {
      const run = await read(runId);
      return run.pendingApprovals.length === 1 && run.toolCalls.some((c) => c.id === 'call_1_1' && c.status === 'ok');
    }, WAIT_MS, 'echo done while count waits');
    expect((await read(runId)).pendingApprovals.map((p) => p.toolCallId)).toEqual(['call_1_2']);
    // An event stream shows echo's end at once too: nothing it must deliver first waits for the decision.
    const streamed = releasable(await listEvents(api.engine.db, runId), EventCursor.after(0)).map(({ event: e }) => `${e.type} ${String(e.data.toolCallId ?? '')}`.trim());
    expect(streamed).toEqual(expect.arrayContaining(['approval_requested call_1_2', 'tool_call_started call_1_1', 'tool_call_ended call_1_1']));
    expect(streamed).not.toContain('tool_call_started call_1_2');
    expect((await decide(runId, 'call_1_2', { decision: 'approve' })).statusCode).toBe(200);
    const result = await api.engine.result(runId);
    expect(result.output).toMatch(/^echo: now\ncount: \d+$/);
    const types = (await listEvents(api.engine.db, runId)).map((e) => `${e.type} ${String(e.data.toolCallId ?? '')}`.trim());
    expect(types.indexOf('approval_resolved call_1_2')).toBeLessThan(types.indexOf('tool_call_started call_1_2'));
  });

  test('without trusted annotations, unless_read_only asks for read-only tools too; a per-tool rule overrides the default', async () => {
    const fx = await integration({ default: 'unless_read_only', tools: { count: 'never' } });
    const runId = await start([fx], [
      { toolCalls: [{ name: `${fx.name}__count`, arguments: {} }, { name: `${fx.name}__echo`, arguments: { text: 'x' } }] },
      { text: '{{tool_results}}' },
    ]);
    const pending = await pendingOf(runId);
    expect(pending.map((p) => p.toolCallId)).toEqual(['call_1_2']);
    expect((await decide(runId, 'call_1_2', { decision: 'approve', reason: 'fine' })).statusCode).toBe(200);
    expect((await api.engine.result(runId)).output).toMatch(/^count: \d+\necho: x$/);
  });

  test('of two concurrent decisions exactly one wins; the other is a 409', async () => {
    const fx = await integration({ default: 'always' });
    const runId = await start([fx], [{ toolCalls: [{ name: `${fx.name}__echo`, arguments: { text: 'race' } }] }, { text: '{{tool_results}}' }]);
    await pendingOf(runId);
    const answers = await Promise.all([
      decide(runId, 'call_1_1', { decision: 'approve' }), decide(runId, 'call_1_1', { decision: 'deny', reason: 'no' }),
      decide(runId, 'call_1_1', { decision: 'approve' }),
    ]);
    const codes = answers.map((a) => a.statusCode).sort();
    expect(codes).toEqual([200, 409, 409]);
    const winner = answers.find((a) => a.statusCode === 200)!;
    const result = await api.engine.result(runId);
    const winnerDenied = winner === answers[1];
    expect(result.output).toBe(winnerDenied ? approvalText.denied('no') : 'echo: race');
    for (const loser of answers.filter((a) => a !== winner)) {
      expect(loser.json()).toMatchObject({ code: 'already_decided', decision: winnerDenied ? 'deny' : 'approve' });
    }
  });

  test('cancelling a run that waits cancels its pending approvals, each with an approval_resolved event before run_ended', async () => {
    const fx = await integration({ default: 'always' });
    const runId = await start([fx], [{ toolCalls: [{ name: `${fx.name}__count`, arguments: {} }] }, { text: 'never' }]);
    await pendingOf(runId);
    expect((await api.app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` })).statusCode).toBe(202);
    const result = await api.engine.result(runId);
    expect(result.status).toBe('cancelled');
    expect((await read(runId)).pendingApprovals).toEqual([]);
    const events = await listEvents(api.engine.db, runId);
    expect(events.map((e) => e.type).slice(-2)).toEqual(['approval_resolved', 'run_ended']);
    expect(events.at(-2)?.data).toMatchObject({ toolCallId: 'call_1_1', status: 'cancelled', decision: null, by: 'cancel' });
    const late = await decide(runId, 'call_1_1', { decision: 'approve' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ approvalStatus: 'cancelled' });
  });

  test('a decision is validated: an unknown decision or an over-long reason is a 400', async () => {
    expect((await decide('run_x', 'call_1_1', { decision: 'maybe' })).statusCode).toBe(400);
    expect((await decide('run_x', 'call_1_1', { decision: 'deny', reason: 'r'.repeat(4001) })).statusCode).toBe(400);
    expect((await decide('run_x', 'call_1_1', {})).statusCode).toBe(400);
  });
});
