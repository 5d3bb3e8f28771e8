import fs from 'node:fs/promises';
import path from 'node:path';
import type { Client, HistoryAndWorkflowId, WorkflowExecutionInfo } from '@temporalio/client';
// Not re-exported by the package's index: the same JSON as `temporal workflow show --output json`.
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';

/**
 * The replay gate's work: the most recent runs a visibility query lists, their histories fetched
 * from the Temporal server, replayed one by one against a build of the workflow code. A history
 * that replays to other commands than it recorded (DeterminismViolationError), or fails otherwise,
 * is a run that this build would break.
 */

/** The workflow code to replay against: a prebuilt bundle (as images ship), or a module to bundle now. */
export type ReplayCode = { bundlePath: string } | { workflowsPath: string };

export interface ListedRun {
  workflowId: string;
  runId: string;
  /** running, completed, continued as new… as the server says */
  status: string;
}

export interface ReplayOutcome {
  run: ListedRun;
  /** ok: replayed to the same commands; fail: it did not (error says why); gone: no history any more (retention) */
  result: 'ok' | 'fail' | 'gone';
  /** the error's class name and message, on one line */
  error?: string;
  /** whether the error is a nondeterminism (the SDK's DeterminismViolationError) */
  nondeterminism?: boolean;
}

export interface ReplayRunsOptions {
  client: Client;
  code: ReplayCode;
  /** writes each fetched history there, as `temporal workflow show --output json` does */
  outDir?: string;
  /** told of each run as soon as it has been replayed */
  onOutcome?: (outcome: ReplayOutcome) => void;
}

/** The first `limit` executions the query lists: the server lists open ones, then the most recently closed. */
export async function listRuns(client: Client, query: string, limit: number): Promise<ListedRun[]> {
  const runs: ListedRun[] = [];
  if (limit <= 0) return runs;
  for await (const e of client.workflow.list({ query, pageSize: Math.min(limit, 1000) })) {
    runs.push({ workflowId: e.workflowId, runId: e.runId, status: statusName(e) });
    if (runs.length >= limit) break;
  }
  return runs;
}

/** Replays the listed runs' histories, in the order listed; every outcome, ok or not. */
export async function replayRuns(runs: ListedRun[], options: ReplayRunsOptions): Promise<ReplayOutcome[]> {
  const outcomes: ReplayOutcome[] = [];
  const report = (o: ReplayOutcome) => {
    outcomes.push(o);
    options.onOutcome?.(o);
  };
  if (runs.length === 0) return outcomes;
  if (options.outDir) await fs.mkdir(options.outDir, { recursive: true });
  // Results come back one per history pushed, in order: the oldest run pushed is the one answered.
  const pushed: ListedRun[] = [];
  async function* histories(): AsyncGenerator<HistoryAndWorkflowId> {
    for (const run of runs) {
      const history = await fetchHistory(options.client, run);
      if (!history) {
        report({ run, result: 'gone' });
        continue;
      }
      if (options.outDir) await fs.writeFile(path.join(options.outDir, historyFileName(run)), historyToJSON(history));
      pushed.push(run);
      yield { workflowId: run.workflowId, history };
    }
  }
  for await (const result of Worker.runReplayHistories(replayOptions(options.code), histories())) {
    const run = pushed.shift() ?? { workflowId: result.workflowId, runId: result.runId, status: 'unknown' };
    if (!result.error) report({ run, result: 'ok' });
    else report({ run, result: 'fail', error: oneLine(result.error), nondeterminism: result.error.name === 'DeterminismViolationError' });
  }
  return outcomes;
}

function replayOptions(code: ReplayCode): ReplayWorkerOptions {
  return 'bundlePath' in code
    ? { workflowBundle: { codePath: code.bundlePath }, replayName: 'replay-gate' }
    : { workflowsPath: code.workflowsPath, replayName: 'replay-gate' };
}

/** `<workflow id>.<run id>.json`, with anything but letters, digits, `.`, `_` and `-` made `_`. */
function historyFileName(run: Pick<ListedRun, 'workflowId' | 'runId'>): string {
  return `${run.workflowId}.${run.runId}.json`.replace(/[^\w.-]/g, '_');
}

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;

/** The run's history; undefined when the server no longer has it (a closed run past its retention). */
async function fetchHistory(client: Client, run: ListedRun): Promise<History | undefined> {
  try {
    return await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
  } catch (err) {
    // gRPC NOT_FOUND
    if ((err as { code?: unknown }).code === 5) return undefined;
    throw err;
  }
}

/** running, completed, continued as new… */
function statusName(e: WorkflowExecutionInfo): string {
  return e.status.name.toLowerCase().replace(/_/g, ' ');
}

/**
 * The error on one line. A nondeterminism's message wraps core's own in a debug dump of the failure:
 * its inner message (`[TMPRL1100] Nondeterminism error: …`, naming the event that did not match) is what says why.
 */
function oneLine(err: Error): string {
  const inner = /message: "((?:[^"\\]|\\.)*)"/.exec(err.message)?.[1];
  const text = `${err.name}: ${inner ?? err.message}`.replace(/\s+/g, ' ').trim();
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}
