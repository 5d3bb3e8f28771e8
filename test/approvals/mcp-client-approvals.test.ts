import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/client';
import { createRequestStateCodec } from '@modelcontextprotocol/server';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { toolNameOf } from '../../mcp-server/agent-server';
import { insertAgent } from '../../store/agents';
import { findApproval } from '../../store/approvals';
import { insertIntegration } from '../../store/integrations/integrations';
import { findRunResult } from '../../store/runs/results';
import { listEvents } from '../../store/runs/events';
import { logger, startEngine, type Engine } from '../support/engine';
import { mcpStdioTransport } from '../support/cli';
import { waitFor } from '../support/wait';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mcp-fixture-server.ts');
const suffix = () => randomUUID().slice(0, 8);
/** MCP_REQUEST_STATE_KEY of the API under test: the tests mint an expired state with it */
const STATE_KEY = randomBytes(32);
const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } };

/**
 * Agents exposed as MCP tools, whose runs need approvals. A 2025-era client that declared
 * elicitation is asked over stdio; over stateless HTTP its run waits for the REST decision and says
 * so. A 2026-era client that declared form elicitation is asked by an input_required result, over both.
 */
describe('approvals of runs started by an MCP client', () => {
  let engine: Engine;
  let app: FastifyInstance;
  let mcpUrl: URL;
  let agentTool: string;
  let slowTool: string;

  beforeAll(async () => {
    engine = await startEngine('embedded');
    const integration = await insertIntegration(engine.db, {
      name: `ap${suffix()}`, approval: { default: 'always' },
      transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    const agent = await insertAgent(engine.db, {
      name: `approver_${suffix()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'launch' } }] },
        { text: 'result: {{tool_results}}' },
      ] },
    });
    agentTool = toolNameOf(agent.name);
    // The same, with a slow last turn: the call goes on for a while after its approval is decided.
    slowTool = toolNameOf((await insertAgent(engine.db, {
      name: `slow_approver_${suffix()}`, integrationIds: [integration.id],
      model: { provider: 'scripted', script: [
        { toolCalls: [{ name: `${integration.name}__echo`, arguments: { text: 'launch' } }] },
        { text: 'result: {{tool_results}}', delayMs: 5_000 },
      ] },
    })).name);
    app = await buildApp({ db: engine.db, client: engine.client, taskQueue: engine.taskQueue, logger, rateLimitPerMinute: 0, mcpRequestStateKey: STATE_KEY });
    mcpUrl = new URL(`${await app.listen({ host: '127.0.0.1', port: 0 })}/mcp`);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await engine?.close();
  });

  const stdio = () => mcpStdioTransport(engine.taskQueue);

  /** A client that declares elicitation and answers every question with `answer`, keeping what it was asked. */
  async function elicitingClient(answer: ElicitResult): Promise<{ client: Client; asked: ElicitRequest['params'][] }> {
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const asked: ElicitRequest['params'][] = [];
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push(request.params);
      return answer;
    });
    await client.connect(stdio());
    return { client, asked };
  }

  const runIdOf = (result: { _meta?: unknown }) => (result._meta as { runId: string }).runId;
  /** The run of this agent that has a call waiting for approval, if any. */
  const waitingRunOf = async (agentName: string) => (await engine.db.query<{ run_id: string }>(
    "SELECT a.run_id FROM run_approvals a JOIN runs r ON r.id = a.run_id JOIN agents g ON g.id = r.agent_id WHERE g.name = $1 AND a.status = 'pending'",
    [agentName])).rows[0]?.run_id;

  test('over stdio, the client\'s user approves in a form: the tool runs and the decision records who made it', async () => {
    const { client, asked } = await elicitingClient({ action: 'accept', content: { decision: 'approve' } });
    try {
      const result = await client.callTool({ name: agentTool, arguments: { input: 'go' } }, { timeout: 120_000 });
      expect(result.isError).toBeFalsy();
      expect(result.content).toEqual([{ type: 'text', text: 'result: echo: launch' }]);
      expect(asked).toHaveLength(1);
      expect(asked[0].message).toMatch(/^The agent wants to call ap[0-9a-f]{8}__echo \{"text":"launch"\}\. Approve this tool call\?$/);
      expect(asked[0]).toMatchObject({ requestedSchema: { required: ['decision'], properties: { decision: { enum: ['approve', 'deny'] } } } });
      const runId = runIdOf(result);
      const resolved = (await listEvents(engine.db, runId)).find((e) => e.type === 'approval_resolved');
      expect(resolved?.data).toMatchObject({ status: 'approved', decision: 'approve', by: 'api', keyKind: 'mcp_client' });
      // The stdio client's decision is recorded as its caller's: agent-engine mcp without AGENT_ENGINE_KEY is the operator.
      expect(resolved?.data).toMatchObject({ decidedBy: { principalId: 'operator', name: 'operator' } });
      // And the audit log has it, as it has the API's decisions.
      const audited = await engine.db.query(
        "SELECT tenant_id, principal_id, action, target FROM audit_events WHERE target = $1 || '/' || $2", [runId, resolved?.data.toolCallId]);
      expect(audited.rows).toEqual([{ tenant_id: 'ten_default', principal_id: 'operator', action: 'MCP approval', target: expect.any(String) }]);
    } finally {
      await client.close();
    }
  }, 120_000);

  test('over stdio, a denial with a reason reaches the LLM in the contract\'s words, and the run goes on', async () => {
    const { client } = await elicitingClient({ action: 'accept', content: { decision: 'deny', reason: 'not today' } });
    try {
      const result = await client.callTool({ name: agentTool, arguments: { input: 'go' } }, { timeout: 120_000 });
      expect(result.content).toEqual([{ type: 'text', text: 'result: Tool call denied by a reviewer: not today' }]);
      const runId = runIdOf(result);
      expect((await findRunResult(engine.db, runId))?.status).toBe('completed');
    } finally {
      await client.close();
    }
  }, 120_000);

  test('over stdio, a dismissed form leaves the call waiting for the REST decision', async () => {
    const { client, asked } = await elicitingClient({ action: 'cancel' });
    const progress: string[] = [];
    client.setNotificationHandler('notifications/progress', (n) => {
      if (n.params.message) progress.push(n.params.message);
    });
    try {
      const call = client.callTool({ name: agentTool, arguments: { input: 'go' } }, { timeout: 120_000, onprogress: () => undefined });
      await waitFor(async () => asked.length === 1, 60_000, 'the question');
      let runId = '';
      await waitFor(async () => {
        runId = (await waitingRunOf(agentTool)) ?? '';
        return Boolean(runId);
      }, 30_000, 'the pending approval');
      const waiting = progress.find((m) => m.startsWith('Waiting for approval'));
      expect(waiting).toMatch(new RegExp(`answer the question, or decide with POST /v1/runs/${runId}/approvals/`));
      const pending = (await app.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json<{ pendingApprovals: { toolCallId: string }[] }>().pendingApprovals;
      expect(pending).toHaveLength(1);
      const decided = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${pending[0].toolCallId}`, payload: { decision: 'approve' } });
      expect(decided.statusCode).toBe(200);
      const result = await call;
      expect(result.content).toEqual([{ type: 'text', text: 'result: echo: launch' }]);
      expect((await findApproval(engine.db, runId, pending[0].toolCallId))?.keyKind).toBe('none');
    } finally {
      await client.close();
    }
  }, 120_000);

  test('over stdio, a question still open when the call is decided elsewhere is withdrawn', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    let asked = 0;
    let withdrawn = false;
    // The first question is approved at once; the second is never answered: its handler returns
    // only when the server withdraws it. (The SDK's client ignores the cancellation of a request
    // whose id is 0, the first a server sends, so the question to withdraw must not be the first.)
    client.setRequestHandler('elicitation/create', (_request, ctx) => new Promise<ElicitResult>((resolve) => {
      asked += 1;
      if (asked === 1) resolve({ action: 'accept', content: { decision: 'approve' } });
      ctx.mcpReq.signal.addEventListener('abort', () => {
        withdrawn = true;
        resolve({ action: 'cancel' });
      });
    }));
    await client.connect(stdio());
    try {
      const first = await client.callTool({ name: agentTool, arguments: { input: 'go' } }, { timeout: 120_000 });
      expect(first.content).toEqual([{ type: 'text', text: 'result: echo: launch' }]);
      let answered = false;
      const call = client.callTool({ name: slowTool, arguments: { input: 'go' } }, { timeout: 120_000 }).finally(() => {
        answered = true;
      });
      await waitFor(async () => asked === 2, 60_000, 'the second question');
      const runId = (await waitingRunOf(slowTool))!;
      expect((await app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/call_1_1`, payload: { decision: 'deny' } })).statusCode).toBe(200);
      await waitFor(async () => withdrawn, 30_000, 'the question to be withdrawn');
      // Withdrawn as the decision was heard, while the run still had its slow last turn to go.
      expect(answered).toBe(false);
      expect((await call).content).toEqual([{ type: 'text', text: 'result: Tool call denied by a reviewer.' }]);
    } finally {
      await client.close();
    }
  }, 120_000);

  test('over stateless HTTP, the run waits for the REST decision and the progress message says where to send it', async () => {
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    let asked = 0;
    client.setRequestHandler('elicitation/create', () => {
      asked += 1;
      return { action: 'accept', content: { decision: 'deny' } };
    });
    const progress: string[] = [];
    client.setNotificationHandler('notifications/progress', (n) => {
      if (n.params.message) progress.push(n.params.message);
    });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    try {
      const call = client.callTool({ name: agentTool, arguments: { input: 'go' } }, { timeout: 120_000, onprogress: () => undefined });
      let message = '';
      await waitFor(async () => Boolean(message = progress.find((m) => m.startsWith('Waiting for approval')) ?? ''), 60_000, 'the waiting message');
      const [, tool, runId, toolCallId] = /^Waiting for approval of (\S+): the run waits until it is decided with POST \/v1\/runs\/([^/]+)\/approvals\/(\S+) or agent-engine approve\|deny \2 \3$/.exec(message) ?? [];
      expect(tool).toMatch(/^ap[0-9a-f]{8}__echo$/);
      const decided = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/approvals/${toolCallId}`, payload: { decision: 'approve' } });
      expect(decided.statusCode).toBe(200);
      const result = await call;
      expect(result.content).toEqual([{ type: 'text', text: 'result: echo: launch' }]);
      expect(progress).toContain(`${tool} approved`);
      expect(asked).toBe(0);
    } finally {
      await client.close();
    }
  }, 120_000);
  /** A 2026-era client that declares form elicitation and answers every question with `answer`. */
  async function modernClient(transport: 'http' | 'stdio', answer: ElicitResult) {
    const client = new Client({ name: 'test', version: '1.0.0' }, { ...MODERN, capabilities: { elicitation: { form: {} } } });
    const asked: ElicitRequest['params'][] = [];
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push(request.params);
      return answer;
    });
    await client.connect(transport === 'http' ? new StreamableHTTPClientTransport(mcpUrl) : stdio());
    expect(client.getProtocolEra()).toBe('modern');
    return { client, asked };
  }

  test.each(['http', 'stdio'] as const)('2026 era over %s: the approval is asked by an input_required result, and the answer decides it', async (transport) => {
    const { client, asked } = await modernClient(transport, { action: 'accept', content: { decision: 'approve' } });
    try {
      const result = await client.callTool({ name: agentTool, arguments: { input: 'go' } }, { timeout: 120_000 });
      expect(result.content).toEqual([{ type: 'text', text: 'result: echo: launch' }]);
      expect(asked).toHaveLength(1);
      expect(asked[0].message).toMatch(/^The agent wants to call ap[0-9a-f]{8}__echo \{"text":"launch"\}\. Approve this tool call\?$/);
      const resolved = (await listEvents(engine.db, runIdOf(result))).find((e) => e.type === 'approval_resolved');
      expect(resolved?.data).toMatchObject({ status: 'approved', keyKind: 'mcp_client' });
    } finally {
      await client.close();
    }
  }, 120_000);

  describe('2026 era over HTTP, the requestState driven by hand', () => {
    let client: Client;
    beforeAll(async () => {
      client = new Client({ name: 'test', version: '1.0.0' }, { ...MODERN, capabilities: { elicitation: { form: {} } }, inputRequired: { autoFulfill: false } });
      await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    });
    afterAll(async () => client?.close());

    const runsOf = async (tool: string) => (await engine.db.query(
      'SELECT count(*)::int AS n FROM runs r JOIN agents a ON a.id = r.agent_id WHERE a.name = $1', [tool])).rows[0].n as number;
    type Round = { resultType?: string; requestState?: string; inputRequests?: Record<string, { method: string; params: { message: string } }> };
    const call = (params: Record<string, unknown>) =>
      client.callTool({ name: agentTool, arguments: { input: 'go' }, ...params }, { timeout: 120_000, allowInputRequired: true }) as Promise<Round & { content?: unknown; _meta?: unknown }>;
    const approve = { approval: { action: 'accept', content: { decision: 'approve' } } };

    test('the retry resumes the run it names, never another; replayed, it is already_decided; tampered or expired, -32602 and nothing changes', async () => {
      const first = await call({});
      expect(first.resultType).toBe('input_required');
      expect(first.inputRequests?.approval.method).toBe('elicitation/create');
      const state = first.requestState!;
      const [body] = state.slice(3).split('.');
      const { p } = JSON.parse(Buffer.from(body, 'base64url').toString()) as { p: { runId: string; toolCallId: string } };
      expect(Object.keys(p).sort()).toEqual(['runId', 'toolCallId']);
      expect((await findApproval(engine.db, p.runId, p.toolCallId))?.status).toBe('pending');

      const tampered = `${state.slice(0, -2)}${state.endsWith('AA') ? 'BB' : 'AA'}`;
      await expect(call({ requestState: tampered, inputResponses: approve })).rejects.toMatchObject({ code: -32602, data: { reason: 'invalid_request_state' } });
      const expired = await createRequestStateCodec({ key: STATE_KEY, ttlSeconds: -60, bind: (ctx) => `none\0${ctx.mcpReq.method}` })
        .mint(p, { mcpReq: { method: 'tools/call' } } as never);
      await expect(call({ requestState: expired, inputResponses: approve })).rejects.toMatchObject({ code: -32602, data: { reason: 'invalid_request_state' } });
      expect((await findApproval(engine.db, p.runId, p.toolCallId))?.status).toBe('pending');

      const runs = await runsOf(agentTool);
      const answered = await call({ requestState: state, inputResponses: approve });
      expect(answered.content).toEqual([{ type: 'text', text: 'result: echo: launch' }]);
      expect(runIdOf(answered)).toBe(p.runId);
      expect(await runsOf(agentTool)).toBe(runs);
      expect((await findApproval(engine.db, p.runId, p.toolCallId))?.keyKind).toBe('mcp_client');

      await expect(call({ requestState: state, inputResponses: { approval: { action: 'accept', content: { decision: 'deny' } } } }))
        .rejects.toMatchObject({ code: -32602, data: { reason: 'already_decided', approvalStatus: 'approved' } });
    }, 120_000);
  });
});
