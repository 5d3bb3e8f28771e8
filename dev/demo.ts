import { ApiError, createApiClient, type ApiClient } from '../cli/api-client';
import { followRun } from '../cli/event-stream';
import { shortened } from '../core/truncated-text';
import type { RunView } from '../core/run-view';

/**
 * The `npm start` demo: a scripted agent run driven through the REST API, as a user would.
 * The scripted provider is the offline default, so the demo needs no API key.
 */
const DEMO_AGENT = {
  name: 'demo',
  description: 'A scripted agent that shows a run: a tool call, an error returned as text, and an answer.',
  instructions: 'You are a demo agent. Answer briefly.',
  model: {
    provider: 'scripted',
    script: [
      { text: 'Let me check the weather.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Lyon' } }], delayMs: 400 },
      { text: 'The weather tool is not available to me, so I cannot say. Its error was: {{tool_results}}', delayMs: 400 },
    ],
  },
  maxTurns: 5,
};

interface DemoAgent { id: string; disabledAt: string | null }

/** The demo agent, made on the first start and read on later ones; undefined when someone deleted it. */
async function demoAgent(api: ApiClient): Promise<DemoAgent | undefined> {
  try {
    return await api.post<DemoAgent>('/v1/agents', DEMO_AGENT);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 409)) throw err;
  }
  const agent = await api.get<DemoAgent>(`/v1/agents/${encodeURIComponent(DEMO_AGENT.name)}`);
  return agent.disabledAt ? undefined : agent;
}

/**
 * Prints the run as it goes from its event log, which is in order and complete: a snapshot of the
 * run object shows only where the run is when it is read, and one read may span several turns.
 */
export async function runDemo(
  baseUrl: string, print: (line: string) => void, opts: { apiKey?: string; signal: AbortSignal },
): Promise<RunView | undefined> {
  const api = createApiClient({ baseUrl, apiKey: opts.apiKey });
  const agent = await demoAgent(api);
  if (!agent) {
    print(`demo: skipped (the agent ${DEMO_AGENT.name} was deleted)`);
    return undefined;
  }
  const thread = await api.post<{ id: string }>('/v1/threads', { agentId: agent.id });
  const { id: runId } = await api.post<{ id: string }>(`/v1/threads/${thread.id}/runs`, { input: 'What is the weather in Lyon?' });
  const runPath = `/v1/runs/${encodeURIComponent(runId)}`;
  print(`demo: started run ${runId} (GET ${baseUrl}${runPath})`);

  for await (const event of followRun(api, runId, opts.signal)) {
    if (event.event === 'turn_ended') print(`demo: turn ${String(event.data.turn)} done`);
    if (event.event === 'tool_call_ended') {
      // The event names the call; its result is in the run object, written with the event.
      const call = (await api.get<RunView>(runPath)).toolCalls.find((c) => c.id === event.data.toolCallId);
      print(`demo:   tool ${String(event.data.name)} → ${String(event.data.status)}: ${shortened(call?.result ?? '', 120)}`);
    }
  }
  if (opts.signal.aborted) return undefined;
  const run = await api.get<RunView>(runPath);
  print(`demo: run ${run.status} (${run.stopReason}) after ${run.turns} turns`);
  print(`demo: answer: ${run.output}`);
  return run;
}
