import { followSseText, sseEventsOf } from '../support/sse-text';
import { echoOutput, echoScript, fixtureIntegration, type Api, type Json } from './engine-processes';

/**
 * The run shapes of `npm run bench:capacity`, each driven as a client drives it through the API and
 * checked before it counts. The model is the scripted provider (no LLM's time or tokens in the
 * figures); the tools are the fixture MCP server's `echo` (test/fixtures/mcp-fixture-server.ts), over stdio.
 *  - answer: one turn that answers; the client POSTs, then long-polls GET /v1/runs/:id?waitMs until it ends;
 *  - tools: three turns, two MCP calls (one in each of the first two turns), driven as `answer`;
 *  - streamed: one turn whose answer comes in 20 pieces over 1.2 s; the client follows the run's
 *    event stream (GET /v1/runs/:id/events) to run_ended, then reads the run once;
 *  - approval: one MCP call that waits for a person's approval (the integration's `approval`
 *    policy: always), then an answer; the client follows the event stream, approves the call once
 *    approval_requested comes (POST /v1/runs/:id/approvals/:toolCallId), and reads the run once it ended.
 */

export type ShapeKey = 'answer' | 'tools' | 'streamed' | 'approval';

export interface Shape { key: ShapeKey; label: string; run(): Promise<void> }

const TOOLS_SHAPE = [1, 1];
const STREAMED_TEXT = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
const STREAM_CHUNKS = 20;

/** A run of `agentId` that ended: its run object, checked to have completed with `output` and `calls` tool calls, each ok. */
function checked(run: Json, output: string, calls: number): void {
  const toolCalls = (run.toolCalls ?? []) as { status: string; result: string }[];
  const failed = toolCalls.find((c) => c.status !== 'ok');
  if (run.status !== 'completed' || run.output !== output || toolCalls.length !== calls || failed) {
    const why = failed ? `a tool call failed: ${failed.result}` : `${String(run.status)}, ${toolCalls.length} tool calls, output ${JSON.stringify(run.output)}`;
    throw new Error(`run ${String(run.id)} did not complete as its script says (${why})`);
  }
}

async function start(api: Api, agentId: string): Promise<string> {
  return String((await api.post('/v1/runs', { agentId, input: 'go' })).id);
}

/** Long polls the run until it has ended. */
async function ended(api: Api, id: string): Promise<Json> {
  for (;;) {
    const { status, body } = await api.get(`/v1/runs/${id}?waitMs=30000`);
    if (status !== 200) throw new Error(`GET /v1/runs/${id} answered ${status}: ${JSON.stringify(body)}`);
    if (body.status !== 'running') return body;
  }
}

async function streamedRun(api: Api, agentId: string): Promise<void> {
  const id = await start(api, agentId);
  const sse = await followSseText(`${api.url}/v1/runs/${id}/events`).text();
  const pieces = sseEventsOf<{ text: string }>(sse, 'text_delta');
  if (pieces.length < 2 || pieces.map((p) => p.text).join('') !== STREAMED_TEXT) {
    throw new Error(`run ${id}: the stream held ${pieces.length} text_delta events, adding up to ${JSON.stringify(pieces.map((p) => p.text).join(''))}`);
  }
  checked((await api.get(`/v1/runs/${id}`)).body, STREAMED_TEXT, 0);
}

async function approvedRun(api: Api, agentId: string): Promise<void> {
  const id = await start(api, agentId);
  const stream = followSseText(`${api.url}/v1/runs/${id}/events`);
  await stream.seen('event: approval_requested', 60_000);
  const pending = (await api.get(`/v1/runs/${id}`)).body.pendingApprovals as { toolCallId: string }[] | undefined;
  if (pending?.length !== 1) throw new Error(`run ${id}: approval_requested came, but the run lists ${pending?.length ?? 0} pending approvals`);
  await api.post(`/v1/runs/${id}/approvals/${pending[0].toolCallId}`, { decision: 'approve' });
  await stream.text();
  checked((await api.get(`/v1/runs/${id}`)).body, echoOutput([1]), 1);
}

/** Creates the shapes' integrations and agents (names suffixed with `tag`), and returns the shapes. */
export async function capacityShapes(api: Api, tag: string): Promise<Shape[]> {
  const plain = `cap${tag}`;
  const gated = `capgated${tag}`;
  const tools = await fixtureIntegration(api, plain);
  const approved = await fixtureIntegration(api, gated, { approval: { default: 'always' } });
  const agent = async (name: string, integrationIds: unknown[], script: unknown[]) => String((await api.post('/v1/agents', {
    name: `${name}-${tag}`, integrationIds, model: { provider: 'scripted', script },
  })).id);
  const agents = {
    answer: await agent('answer', [], [{ text: 'done' }]),
    tools: await agent('tools', [tools.id], echoScript(plain, TOOLS_SHAPE)),
    streamed: await agent('streamed', [], [{ text: STREAMED_TEXT, chunks: STREAM_CHUNKS, delayMs: 1_200 }]),
    approval: await agent('approval', [approved.id], echoScript(gated, [1])),
  };
  return [
    { key: 'answer', label: '(a) one turn, answer', run: async () => checked(await ended(api, await start(api, agents.answer)), 'done', 0) },
    {
      key: 'tools', label: '(b) 3 turns, 2 MCP calls',
      run: async () => checked(await ended(api, await start(api, agents.tools)), echoOutput(TOOLS_SHAPE), 2),
    },
    { key: 'streamed', label: `(c) streamed answer, ${STREAM_CHUNKS} pieces over 1.2 s`, run: () => streamedRun(api, agents.streamed) },
    { key: 'approval', label: '(d) 1 MCP call approved by a person, answer', run: () => approvedRun(api, agents.approval) },
  ];
}
