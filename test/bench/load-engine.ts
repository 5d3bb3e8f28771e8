import { randomUUID } from 'node:crypto';
import type { SearchAttributePair } from '@temporalio/common';
import { runStartAttributes } from '../../core/search-attributes';
import { echoOutput, echoScript, type Api, type Json } from './engine-processes';

/**
 * bench:load's runs (and bench:metrics', beside it), on the engine processes of engine-processes.ts:
 * its run shapes, the agents that play them, and one run as a user makes it, checked.
 */

/** tool calls per turn: the load shape (4 LLM turns, 6 MCP calls) and the latency shape (2 turns, 1 call) */
export const LOAD_SHAPE = [2, 2, 2];
export const LATENCY_SHAPE = [1];

/** A scripted agent's script whose run makes `shape[t]` echo calls of `integration` in turn t+1, then answers with the last turn's results. */
export const scriptFor = (shape: number[], integration: string) => echoScript(integration, shape);

export interface Engine { api: Api; agents: Record<'load' | 'latency', string> }

/** One engine run as a user drives it: POST (a one-shot run, on a thread of its own), then long polls until it ends; checked against its script. */
export async function engineRun(engine: Engine, kind: 'load' | 'latency', onStarted?: (id: string) => void): Promise<void> {
  const { id } = await engine.api.post('/v1/runs', { agentId: engine.agents[kind], input: 'go' });
  onStarted?.(String(id));
  let run: Json;
  do {
    const res = await engine.api.get(`/v1/runs/${String(id)}?waitMs=30000`);
    if (res.status !== 200) throw new Error(`GET /v1/runs/${String(id)} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    run = res.body;
  } while (run.status === 'running');
  const shape = kind === 'load' ? LOAD_SHAPE : LATENCY_SHAPE;
  const calls = run.toolCalls as { status: string; result: string }[];
  const expectedCalls = shape.reduce((a, b) => a + b, 0);
  const failedCall = calls.find((c) => c.status !== 'ok');
  if (run.status !== 'completed' || run.output !== echoOutput(shape) || calls.length !== expectedCalls || failedCall) {
    const why = failedCall ? `a tool call failed: ${failedCall.result}` : `${String(run.status)}, ${calls.length} tool calls, output ${JSON.stringify(run.output)}`;
    throw new Error(`engine run ${String(id)} did not complete correctly (${why})`);
  }
}

/** A scripted agent of the integrations `integrationIds`; returns its id. */
export async function createScriptedAgent(api: Api, name: string, integrationIds: unknown[], script: unknown[]): Promise<string> {
  return String((await api.post('/v1/agents', { name, integrationIds, model: { provider: 'scripted', script } })).id);
}

/** The search attributes a floor run starts with: an engine run's (core/search-attributes.ts), on a thread of its own. */
export const floorSearchAttributes = (agentId: string): SearchAttributePair[] => runStartAttributes({ threadId: randomUUID(), agentId, tenantId: 'default' });
