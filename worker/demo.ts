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

type Json = Record<string, unknown>;

async function api(baseUrl: string, method: string, path: string, body?: unknown, apiKey?: string): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: (await res.json()) as Json };
}

export async function runDemo(baseUrl: string, print: (line: string) => void, apiKey?: string): Promise<Json> {
  let agent = await api(baseUrl, 'POST', '/v1/agents', DEMO_AGENT, apiKey);
  if (agent.status === 409) {
    agent = await api(baseUrl, 'GET', `/v1/agents/${encodeURIComponent(DEMO_AGENT.name)}`, undefined, apiKey);
    if (agent.status !== 200) throw new Error(`the demo agent exists but could not be read: ${JSON.stringify(agent.json)}`);
    if (agent.json.disabledAt) {
      print(`demo: skipped (the agent ${DEMO_AGENT.name} was deleted)`);
      return agent.json;
    }
  } else if (agent.status !== 201) {
    throw new Error(`creating the demo agent failed: ${JSON.stringify(agent.json)}`);
  }
  const thread = await api(baseUrl, 'POST', '/v1/threads', { agentId: agent.json.id }, apiKey);
  const started = await api(baseUrl, 'POST', `/v1/threads/${thread.json.id}/runs`, { input: 'What is the weather in Lyon?' }, apiKey);
  if (started.status !== 202) throw new Error(`starting the demo run failed: ${JSON.stringify(started.json)}`);
  const runId = String(started.json.id);
  print(`demo: started run ${runId} (GET ${baseUrl}/v1/runs/${runId})`);

  let seenTurns = 0;
  let seenCalls = 0;
  for (;;) {
    const { json: run } = await api(baseUrl, 'GET', `/v1/runs/${runId}?waitMs=1000`, undefined, apiKey);
    const toolCalls = (run.toolCalls as Json[]) ?? [];
    if (Number(run.turns) > seenTurns) {
      seenTurns = Number(run.turns);
      print(`demo: turn ${seenTurns} done`);
    }
    for (const call of toolCalls.slice(seenCalls)) print(`demo:   tool ${call.name} → ${call.status}: ${String(call.result).slice(0, 120)}`);
    seenCalls = toolCalls.length;
    if (run.status !== 'running') {
      print(`demo: run ${run.status} (${run.stopReason}) after ${run.turns} turns`);
      print(`demo: answer: ${run.output}`);
      return run;
    }
  }
}
