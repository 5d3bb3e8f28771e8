import os from 'node:os';
import path from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as McpClient } from '@modelcontextprotocol/client';
import type { temporal } from '@temporalio/proto';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { findRunResult } from '../../store/runs/results';
import { insertThread } from '../../store/threads/threads';
import { startRun } from '../../use-cases/runs/start-run';
import { logger, startBenchStack, type BenchStack } from './bench-stack';
import { SearchAttributeGuard } from '../../platform/temporal/search-attributes';
import type { bareMcpCallWorkflow } from './bench-workflows';
import { operatorCaller } from '../../use-cases/caller';
import { arg } from './bench-args';

/**
 * `npm run bench [-- --n=100 --warmup=10]`: the latency of one MCP tool call (`echo` on the
 * fixture server over stdio) made three ways, interleaved so that noise from other work on the
 * machine falls on all of them alike:
 *   (b) a direct, in-process MCP SDK client call;
 *   (c) a bare Temporal activity making the same call through the worker's MCP pool;
 *   (a) the engine: a scripted agent run with one tool call.
 * It starts its own Temporal dev server, embedded PostgreSQL and fixture servers, and stops them.
 */

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts');
const N = arg('n', 100);
const WARMUP = arg('warmup', 10);

type Sample = Record<string, number>;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const ROWS: [key: string, label: string][] = [
  ['direct', '(b) direct MCP SDK client call'],
  ['bareActivity', '(c) bare activity: scheduled → completed'],
  ['bareWorkflow', '(c) bare activity: workflow start → result'],
  ['engineInActivity', '(a) engine: MCP call inside the activity'],
  ['engineActivity', '(a) engine: tool-call activity scheduled → completed'],
  ['engineRun', '(a) engine: whole run start → result'],
];

const now = () => performance.now();

function eventMs(e: HistoryEvent): number {
  const t = e.eventTime!;
  const seconds = typeof t.seconds === 'number' ? t.seconds : Number(t.seconds?.toString() ?? 0);
  return seconds * 1000 + (t.nanos ?? 0) / 1e6;
}

/** Server-side span of the first activity of this type: from scheduling to completion, as the history records it. */
function activitySpanMs(events: HistoryEvent[], activityType: string): number {
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType);
  if (!scheduled) throw new Error(`no ${activityType} activity in the history`);
  const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled.eventId));
  if (!completed) throw new Error(`the ${activityType} activity did not complete`);
  return eventMs(completed) - eventMs(scheduled);
}

async function connectDirect(): Promise<McpClient> {
  const client = new McpClient({ name: 'bench', version: '0.1.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT, stderr: 'ignore' }));
  return client;
}

async function measureOnce(stack: BenchStack, direct: McpClient, agentId: string, i: number): Promise<Sample> {
  const sample: Sample = {};
  const text = `hi ${i}`;

  let t = now();
  const res = await direct.callTool({ name: 'echo', arguments: { text } });
  sample.direct = now() - t;
  if ((res.content as { text: string }[])[0].text !== `echo: ${text}`) throw new Error('the direct call answered wrongly');

  t = now();
  const bare = await stack.client.workflow.start<typeof bareMcpCallWorkflow>('bareMcpCallWorkflow', {
    taskQueue: stack.taskQueue, workflowId: `bare-${i}-${Date.now()}`, args: [text],
  });
  const answer = await bare.result();
  sample.bareWorkflow = now() - t;
  if (answer !== `echo: ${text}`) throw new Error('the bare activity answered wrongly');
  sample.bareActivity = activitySpanMs((await bare.fetchHistory()).events ?? [], 'benchEcho');

  const thread = await insertThread(stack.db, agentId);
  t = now();
  const searchAttributes = new SearchAttributeGuard(stack.client.connection, stack.client.options.namespace, logger);
  const { run } = await startRun({ db: stack.db, client: stack.client, taskQueue: stack.taskQueue, searchAttributes }, operatorCaller(), { threadId: thread.id, input: 'go' });
  const handle = stack.client.workflow.getHandle(run.id);
  await handle.result();
  sample.engineRun = now() - t;
  const result = await findRunResult(stack.db, run.id);
  if (result?.output !== 'echo: hi' || result.toolCalls[0]?.status !== 'ok') throw new Error(`the engine run answered wrongly: ${result?.output}`);
  sample.engineInActivity = result.toolCalls[0].durationMs;
  sample.engineActivity = activitySpanMs((await handle.fetchHistory()).events ?? [], 'callMcpTool');
  return sample;
}

/** Nearest-rank percentile. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function report(samples: Sample[], startupMs: number, totalMs: number): void {
  const stats = Object.fromEntries(ROWS.map(([key]) => {
    const sorted = samples.map((s) => s[key]).sort((a, b) => a - b);
    return [key, { p50: percentile(sorted, 50), p99: percentile(sorted, 99) }];
  }));
  const base = stats.direct;
  const cpus = os.cpus();
  console.log(`\nMCP tool call "echo" (fixture server over stdio): N=${samples.length} each after ${WARMUP} warm-up, interleaved, sequential`);
  console.log(`Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'CPU'}; startup ${(startupMs / 1000).toFixed(1)} s, total ${(totalMs / 1000).toFixed(1)} s\n`);
  const header = ['path'.padEnd(54), 'p50 ms'.padStart(9), 'p99 ms'.padStart(9), 'p50 ×direct'.padStart(12), 'p99 ×direct'.padStart(12)];
  console.log(header.join(''));
  for (const [key, label] of ROWS) {
    const { p50, p99 } = stats[key];
    console.log([label.padEnd(54), p50.toFixed(2).padStart(9), p99.toFixed(2).padStart(9),
      `${(p50 / base.p50).toFixed(1)}×`.padStart(12), `${(p99 / base.p99).toFixed(1)}×`.padStart(12)].join(''));
  }
  console.log(`\nratios: engine run / bare workflow p50 ${(stats.engineRun.p50 / stats.bareWorkflow.p50).toFixed(1)}×;` +
    ` engine tool activity / bare activity p50 ${(stats.engineActivity.p50 / stats.bareActivity.p50).toFixed(1)}×`);
  console.log('(the in-activity figure is the run\'s recorded durationMs, whole milliseconds; activity spans come from history event times)');
}

async function main(): Promise<void> {
  const started = now();
  let stopping = false;
  const stop = () => {
    stopping = true;
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  const stack = await startBenchStack();
  let direct: McpClient | undefined;
  try {
    const integration = await insertIntegration(stack.db, {
      name: 'bench', transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
    });
    stack.bareTarget.integration = integration;
    const agent = await insertAgent(stack.db, {
      name: 'bench-agent', integrationIds: [integration.id],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: 'bench__echo', arguments: { text: 'hi' } }] }, { text: '{{tool_results}}' }] },
    });
    direct = await connectDirect();
    const startupMs = now() - started;

    // Warm-up spawns the pooled server, fills connection pools and JIT-compiles the paths.
    for (let i = 0; i < WARMUP && !stopping; i++) await measureOnce(stack, direct, agent.id, -1 - i);
    const samples: Sample[] = [];
    for (let i = 0; i < N && !stopping; i++) {
      samples.push(await measureOnce(stack, direct, agent.id, i));
      if ((i + 1) % 25 === 0) process.stderr.write(`bench: ${i + 1}/${N}\n`);
    }
    if (samples.length > 0) report(samples, startupMs, now() - started);
  } finally {
    await direct?.close().catch(() => undefined);
    await stack.close();
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
  }
}

// No process.exit(): the process ends by itself once everything started has been stopped.
main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
