import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { RUN_WORKFLOW_TYPE } from '../core/run';
import { EVAL_WORKFLOW_TYPE } from '../core/eval';
import { loadConfig } from '../platform/config';
import { connectTemporal, installTemporalRuntime } from '../platform/temporal/native-connection';
import { listRuns, replayRuns, type ReplayOutcome, type ReplayCode } from './replay-runs';

const DEFAULT_LIMIT = 50;
/** Runs, and the evals that replay them: both last as long as a person waits. */
const DEFAULT_TYPES = `WorkflowType IN ('${RUN_WORKFLOW_TYPE}', '${EVAL_WORKFLOW_TYPE}')`;
const MAX_LIMIT = 1000;

const HELP = `replay-gate: replays the histories of recent runs, fetched from the Temporal server, against
this checkout's workflow code (or a given build of it); fails when one would not replay

usage:
  npm run replay-gate -- [--limit N] [--query "<visibility query>"] [--bundle <file> | --workflows <module>] [--out <dir>]
  node dist/worker/replay-gate.js [the same options]      from a build (npm run build, the image)

options:
  --limit N           how many runs: the open ones first, then the most recently closed (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})
  --query "<query>"   which runs, as a Temporal visibility query
                      (default: ${DEFAULT_TYPES} AND TaskQueue = '<TASK_QUEUE>')
  --bundle <file>     a prebuilt workflow bundle, such as dist/workflow-bundle.js of npm run build
  --workflows <path>  a workflows module to bundle now (default: the engine's workflows/)
  --out <dir>         also writes each history there as JSON, as \`temporal workflow show --output json\` does

It connects as a worker does: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TASK_QUEUE, with TLS and API
keys through the standard TEMPORAL_* variables of @temporalio/envconfig.

exit codes: 0 every history replayed; 1 at least one did not (the change needs a new worker build);
2 usage, configuration or connection error
`;

class UsageError extends Error {}

interface GateArgs { limit: number; query?: string; code: ReplayCode; codeName: string; outDir?: string }

function parseGateArgs(argv: string[]): GateArgs | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv, strict: true, allowPositionals: false,
      options: {
        limit: { type: 'string' }, query: { type: 'string' }, bundle: { type: 'string' }, workflows: { type: 'string' },
        out: { type: 'string' }, help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.help) return 'help';
  const limit = parsed.limit === undefined ? DEFAULT_LIMIT : Number(parsed.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new UsageError(`--limit must be a whole number from 1 to ${MAX_LIMIT}`);
  }
  if (parsed.query !== undefined && !parsed.query.trim()) throw new UsageError('--query is empty');
  if (parsed.bundle && parsed.workflows) throw new UsageError('give --bundle or --workflows, not both');
  let code: ReplayCode;
  let codeName: string;
  if (parsed.bundle) {
    const bundlePath = path.resolve(parsed.bundle);
    if (!fs.statSync(bundlePath, { throwIfNoEntry: false })?.isFile()) throw new UsageError(`--bundle: no file at ${bundlePath}`);
    code = { bundlePath };
    codeName = `the bundle ${parsed.bundle}`;
  } else {
    const module = parsed.workflows ? path.resolve(parsed.workflows) : path.join(__dirname, '..', 'workflows');
    let workflowsPath: string;
    try {
      workflowsPath = require.resolve(module);
    } catch {
      throw new UsageError(`--workflows: no module at ${module}`);
    }
    code = { workflowsPath };
    codeName = `${path.relative(process.cwd(), workflowsPath) || workflowsPath} (bundled now)`;
  }
  return {
    limit, code, codeName, ...(parsed.query ? { query: parsed.query } : {}), ...(parsed.out ? { outDir: path.resolve(parsed.out) } : {}),
  };
}

/** One line per run: what an operator reads, and what a CI log keeps. */
function outcomeLine({ run, result, error }: ReplayOutcome): string {
  const name = `${run.workflowId} run ${run.runId} (${run.status})`;
  if (result === 'ok') return `ok   ${name}`;
  if (result === 'gone') return `gone ${name}: the server no longer has its history`;
  return `FAIL ${name}: ${error ?? 'replay failed'}`;
}

async function main(argv: string[]): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  let args: GateArgs;
  let config;
  try {
    const parsedArgs = parseGateArgs(argv);
    if (parsedArgs === 'help') {
      process.stdout.write(HELP);
      return 0;
    }
    args = parsedArgs;
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`replay-gate: ${(err as Error).message}\n${err instanceof UsageError ? 'see --help\n' : ''}`);
    return 2;
  }
  const query = args.query ?? `${DEFAULT_TYPES} AND TaskQueue = '${config.taskQueue}'`;
  // Its WARN lines ("Failing workflow task") repeat on stderr what the FAIL lines say.
  installTemporalRuntime('ERROR');
  let connection: NativeConnection | undefined;
  try {
    let runs;
    let client: Client;
    try {
      connection = await connectTemporal(config);
      client = new Client({ connection, namespace: config.temporalNamespace });
      runs = await listRuns(client, query, args.limit);
    } catch (err) {
      // The client wraps the server's answer (a bad query says what is wrong in it) as the cause.
      const cause = (err as { cause?: Error }).cause?.message;
      process.stderr.write(`replay-gate: could not list the runs of namespace ${config.temporalNamespace}: `
        + `${(err as Error).message}${cause ? `: ${cause}` : ''}\n`);
      return 2;
    }
    const open = runs.filter((r) => r.status === 'running').length;
    out(`replaying ${runs.length} run(s) (${open} open) of namespace ${config.temporalNamespace} where ${query}, against ${args.codeName}`);
    if (args.outDir) out(`writing their histories to ${args.outDir}`);
    let outcomes: ReplayOutcome[];
    try {
      outcomes = await replayRuns(runs, { client, code: args.code, outDir: args.outDir, onOutcome: (o) => out(outcomeLine(o)) });
    } catch (err) {
      // Not a history that failed to replay: the code would not load, or the server stopped answering.
      process.stderr.write(`replay-gate: the replay could not go on: ${(err as Error).stack ?? err}\n`);
      return 2;
    }
    return reportOutcomes(outcomes, out);
  } finally {
    await connection?.close();
  }
}

/** The tally of the outcomes, and the gate's exit code: 1 when a run failed to replay. */
function reportOutcomes(outcomes: ReplayOutcome[], out: (line: string) => void): number {
  const failed = outcomes.filter((o) => o.result === 'fail');
  const gone = outcomes.filter((o) => o.result === 'gone').length;
  const nondeterministic = failed.filter((o) => o.nondeterminism).length;
  const ok = outcomes.length - failed.length - gone;
  out(`${ok} ok, ${failed.length} failed (${nondeterministic} nondeterministic)${gone ? `, ${gone} gone` : ''}`);
  if (failed.length === 0) return 0;
  out('A run that failed would break under this workflow code: the change needs a new worker build, '
    + 'and the runs open now must stay on the old one.');
  return 1;
}

main(process.argv.slice(2)).then(
  // Let stdout drain first: a CI log must keep every line.
  (code) => process.stdout.write('', () => process.exit(code)),
  (err: unknown) => {
    process.stderr.write(`replay-gate: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(2);
  },
);
