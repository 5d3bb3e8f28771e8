import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { temporal } from '@temporalio/proto';
import { resolveTemporalCli } from '../../platform/temporal/cli';
import { insertAgent } from '../../store/agents';
import { insertIntegration } from '../../store/integrations/integrations';
import { logger } from './bench-stack';
import { startQuestionsStack, wallNow, type QuestionsStack } from './questions-stack';
import { arg } from './bench-args';

/**
 * `npm run bench:questions [-- --n=20 --warmup=2 --hold-ms=5000]`: what an MCP server's question
 * costs while it waits and once it is answered, for the two kinds of question, side by side:
 *   durable (2026): `confirm` of the 2026-era fixture (HTTP) answers input_required; the workflow
 *     waits on a signal and a 1 h timer, no activity running; the answer's signal starts a new
 *     activity that retries the call with the answer;
 *   in-activity (2025): `ask` of the 2025-era fixture (stdio) asks with elicitation/create inside
 *     the call; the activity waits (1 h allowed) and the answer reaches it through LISTEN/NOTIFY.
 * First one run of each is held `--hold-ms` with its question pending, and `temporal workflow
 * describe` shows its pending activities. Then N answers of each, interleaved, timed from the
 * answer's POST returning to events in the run's history (the same machine's clock).
 */

const N = arg('n', 20);
const WARMUP = arg('warmup', 2);
const HOLD_MS = arg('hold-ms', 5_000);
const HOUR_MS = 3_600_000;
const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'mcp-fixture-server.ts');
const exec = promisify(execFile);

type Kind = 'durable' | 'inActivity';
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Sample = Record<string, number>;
type Json = Record<string, unknown>;

const KINDS: Record<Kind, { label: string; tool: string; args: Json; answer: Json; output: string }> = {
  durable: {
    label: 'durable (2026, confirm)', tool: 'modern__confirm', args: { what: 'ship' },
    answer: { action: 'accept', content: { confirm: true } }, output: 'ship: confirmed=true, state=asked:ship',
  },
  inActivity: {
    label: 'in-activity (2025, ask)', tool: 'legacy__ask', args: { message: 'Who?' },
    answer: { action: 'accept', content: { name: 'Ada' } }, output: 'answer: accept {"name":"Ada"}',
  },
};

const ROWS: [kind: Kind, key: string, label: string][] = [
  ['durable', 'post', 'POST answer: request → response'],
  ['durable', 'signal', 'answer → signal event'],
  ['durable', 'signalToStart', 'signal event → retried activity started'],
  ['durable', 'started', 'answer → retried activity started'],
  ['durable', 'serverGot', 'answer → server receives the retried call'],
  ['durable', 'completed', 'answer → tool-call activity completed'],
  ['durable', 'runEnded', 'answer → run completed'],
  ['inActivity', 'post', 'POST answer: request → response'],
  ['inActivity', 'completed', 'answer → tool-call activity completed'],
  ['inActivity', 'runEnded', 'answer → run completed'],
];

function eventMs(e: HistoryEvent): number {
  const t = e.eventTime!;
  return Number(t.seconds?.toString() ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

async function api(stack: QuestionsStack, method: 'GET' | 'POST', p: string, body?: Json): Promise<Json> {
  const res = await fetch(`${stack.apiUrl}${p}`, {
    method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as Json;
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Starts a run of the kind's agent and returns it once its question is pending. */
async function runAsked(stack: QuestionsStack, agentId: string): Promise<{ runId: string; inputId: string }> {
  const runId = String((await api(stack, 'POST', '/v1/runs', { agentId, input: 'go' })).id);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = await api(stack, 'GET', `/v1/runs/${runId}`);
    const input = (run.pendingInputs as { inputId: string }[])[0];
    if (input) return { runId, inputId: input.inputId };
    if (run.status !== 'running') throw new Error(`run ${runId} ended (${String(run.status)}) without asking`);
    if (Date.now() > deadline) throw new Error(`run ${runId} did not ask within 60 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Answers, waits for the run's end, checks its output; returns the POST's start and end times and the history. */
async function answerAndEnd(stack: QuestionsStack, kind: Kind, runId: string, inputId: string) {
  const postStart = wallNow();
  await api(stack, 'POST', `/v1/runs/${runId}/inputs/${inputId}`, KINDS[kind].answer);
  const answered = wallNow();
  const handle = stack.client.workflow.getHandle(runId);
  await handle.result();
  const run = await api(stack, 'GET', `/v1/runs/${runId}`);
  if (run.output !== KINDS[kind].output) throw new Error(`${kind} run ${runId} answered wrongly: ${JSON.stringify(run.output)}`);
  return { postStart, answered, events: (await handle.fetchHistory()).events ?? [] };
}

async function measure(stack: QuestionsStack, kind: Kind, agentId: string): Promise<Sample> {
  const { runId, inputId } = await runAsked(stack, agentId);
  const arrivalsBefore = stack.toolCallArrivals.length;
  const { postStart, answered, events } = await answerAndEnd(stack, kind, runId, inputId);
  const find = (pred: (e: HistoryEvent) => unknown, from = 0) => {
    const e = events.slice(from).find(pred);
    if (!e) throw new Error(`${kind} run ${runId}: an expected event is missing from its history`);
    return e;
  };
  const ended = find((e) => e.workflowExecutionCompletedEventAttributes);
  const sample: Sample = { post: answered - postStart, runEnded: eventMs(ended) - answered };
  if (kind === 'durable') {
    const signalAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
    if (signalAt < 0) throw new Error(`durable run ${runId}: no signal in its history`);
    const started = find((e) => e.activityTaskStartedEventAttributes, signalAt);
    const completed = find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(started.activityTaskStartedEventAttributes!.scheduledEventId));
    const arrival = stack.toolCallArrivals.slice(arrivalsBefore).find((t) => t >= postStart);
    if (arrival === undefined) throw new Error(`durable run ${runId}: the server got no retried call`);
    Object.assign(sample, {
      signal: eventMs(events[signalAt]) - answered, signalToStart: eventMs(started) - eventMs(events[signalAt]),
      started: eventMs(started) - answered, serverGot: arrival - answered, completed: eventMs(completed) - answered,
    });
  } else {
    const scheduled = find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callMcpTool');
    const completed = find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled.eventId));
    sample.completed = eventMs(completed) - answered;
  }
  return sample;
}

/** A run of each kind held with its question pending: what `temporal workflow describe` says meanwhile. */
async function showHeld(stack: QuestionsStack, agents: Record<Kind, string>): Promise<void> {
  const cli = await resolveTemporalCli({ logger });
  for (const kind of ['durable', 'inActivity'] as Kind[]) {
    const { runId, inputId } = await runAsked(stack, agents[kind]);
    await new Promise((r) => setTimeout(r, HOLD_MS));
    const describe = (...more: string[]) => exec(cli, ['workflow', 'describe', '--workflow-id', runId, '--address', stack.temporalAddress, '--namespace', 'default', ...more]);
    const json = JSON.parse((await describe('--output', 'json')).stdout) as { pendingActivities?: unknown[]; workflowExecutionInfo?: { status?: string } };
    const text = (await describe()).stdout.split('\n');
    // From its header to the next top-level line (the next section), without blank lines.
    const from = text.findIndex((l) => /^Pending Activities/i.test(l));
    const to = text.findIndex((l, i) => i > from && /^\S/.test(l));
    const section = from < 0 ? ['(no pending-activities section)'] : text.slice(from, to < 0 ? undefined : to).filter((l) => l.trim() !== '');
    console.log(`\n${KINDS[kind].label}: question pending ${HOLD_MS / 1000} s (elicitationTimeout 1h), status ${json.workflowExecutionInfo?.status ?? '?'}, ` +
      `pendingActivities in JSON: ${json.pendingActivities?.length ?? 0}`);
    console.log(`$ temporal workflow describe --workflow-id ${runId}   # its pending-activities section:`);
    console.log(section.map((l) => `  ${l}`).join('\n'));
    await answerAndEnd(stack, kind, runId, inputId);
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function report(samples: Record<Kind, Sample[]>, totalMs: number): void {
  const cpus = os.cpus();
  console.log(`\nAfter the answer: N=${samples.durable.length} of each after ${WARMUP} warm-up, interleaved, sequential; ms from the POST /v1/runs/:id/inputs/:inputId returning`);
  console.log(`Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'CPU'}; total ${(totalMs / 1000).toFixed(1)} s\n`);
  console.log(['path'.padEnd(26), 'measure'.padEnd(44), 'p50'.padStart(8), 'p90'.padStart(8), 'max'.padStart(8)].join(''));
  for (const [kind, key, label] of ROWS) {
    const sorted = samples[kind].map((s) => s[key]).sort((a, b) => a - b);
    const cells = [percentile(sorted, 50), percentile(sorted, 90), sorted.at(-1)!].map((v) => v.toFixed(1).padStart(8));
    console.log([KINDS[kind].label.padEnd(26), label.padEnd(44), ...cells].join(''));
  }
  const within = samples.durable.filter((s) => s.started < 1_000).length;
  console.log(`\ndurable: the retried call's activity started within 1 s of the answer in ${within} of ${samples.durable.length} runs`);
  console.log('(negative: the event came before the POST\'s response reached the caller; event times are the Temporal server\'s, on this machine\'s clock)');
  console.log('(in-activity: the answer goes API → PostgreSQL NOTIFY → the waiting activity → the stdio server, which then ends the call)');
}

async function main(): Promise<void> {
  const started = wallNow();
  let stopping = false;
  const stop = () => {
    stopping = true;
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const stack = await startQuestionsStack();
  try {
    const modern = await insertIntegration(stack.db, {
      name: 'modern', transport: { type: 'http', url: stack.modernUrl }, elicitation: true, elicitationTimeoutMs: HOUR_MS,
    });
    const legacy = await insertIntegration(stack.db, {
      name: 'legacy', transport: { type: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: ROOT },
      elicitation: true, elicitationTimeoutMs: HOUR_MS,
    });
    const agent = async (kind: Kind, integrationId: string) => (await insertAgent(stack.db, {
      name: `bench-${kind}`, integrationIds: [integrationId],
      model: { provider: 'scripted', script: [{ toolCalls: [{ name: KINDS[kind].tool, arguments: KINDS[kind].args }] }, { text: '{{tool_results}}' }] },
    })).id;
    const agents: Record<Kind, string> = { durable: await agent('durable', modern.id), inActivity: await agent('inActivity', legacy.id) };

    await showHeld(stack, agents);
    const samples: Record<Kind, Sample[]> = { durable: [], inActivity: [] };
    for (let i = 0; i < WARMUP + N && !stopping; i++) {
      for (const kind of ['durable', 'inActivity'] as Kind[]) {
        const sample = await measure(stack, kind, agents[kind]);
        if (i >= WARMUP) samples[kind].push(sample);
      }
    }
    if (samples.inActivity.length > 0) report(samples, wallNow() - started);
  } finally {
    await stack.close();
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
  }
}

// No process.exit(): the process ends by itself once everything started has been stopped.
main().catch((err: unknown) => {
  process.stderr.write(`bench:questions failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
