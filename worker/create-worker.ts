import { NativeConnection, Worker, type State } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import type { WorkerVersion } from '../core/worker-version';
import { toolTaskQueue } from '../core/tool-call';
import { TenantSlotCaps, ToolSlots } from '../activities/tool-slots';
import { canLimitTempFiles, TEMP_FILES_UNLIMITED } from '../sources/query/temp-file-limit';
import { sourceQuerySupport } from '../sources/query/thread-role';
import { deploymentOptions, workflowCode, type WorkflowCode } from './versioning';

export interface EngineWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** a prebuilt workflow bundle (tests, production images); otherwise workflows/ is bundled at start */
  workflowBundlePath?: string;
  /** the code and version from workflowCode() (worker/versioning.ts); absent: workflowBundlePath or workflows/, unversioned */
  code?: WorkflowCode;
  identity?: string;
  /** in-flight activities get `grace` to finish on shutdown before they are cancelled; default 10 s and 30 s */
  shutdown?: { grace: `${number}s`; force: `${number}s` };
  /** how many tool activities (calls, discovery, questions to MCP servers) run at once; default 100, as many as LLM turns */
  toolSlots?: number;
}

/**
 * The engine's worker: two Temporal workers on one connection, with the same code and version.
 * One polls `taskQueue` (the runs' workflows and LLM turns), the other its tool queue (tool calls,
 * discovery: core/tool-call.ts toolTaskQueue), each with its own activity slots, so that tool calls
 * that hang can never take the slots LLM turns need.
 */
export async function createEngineWorker(options: EngineWorkerOptions): Promise<EngineWorker> {
  await warnIfSourceQueryDisabled(options.deps);
  const code = options.code ?? await workflowCode({ workflowBundlePath: options.workflowBundlePath });
  // One set of activities for both: a process counts an integration's calls once (activities/tool-slots.ts).
  const activities = createActivities({
    ...options.deps, toolSlots: options.deps.toolSlots ?? new ToolSlots(new TenantSlotCaps(options.deps.db)),
    ...(code.version ? { version: code.version } : {}),
  });
  const common = {
    connection: options.connection,
    namespace: options.namespace,
    ...(options.identity ? { identity: options.identity } : {}),
    ...deploymentOptions(code.version),
    activities,
    shutdownGraceTime: options.shutdown?.grace ?? '10s',
    shutdownForceTime: options.shutdown?.force ?? '30s',
  };
  const runs = await Worker.create({ ...common, taskQueue: options.taskQueue, ...code.workflows });
  const tools = await Worker.create({
    ...common, taskQueue: toolTaskQueue(options.taskQueue), maxConcurrentActivityTaskExecutions: options.toolSlots ?? DEFAULT_TOOL_SLOTS,
  });
  return new EngineWorker([runs, tools]);
}

export const DEFAULT_TOOL_SLOTS = 100;

/** What an EngineWorker runs: Temporal's workers, or engine workers (a process with pinned queues runs them all as one). */
type Runnable = Pick<Worker, 'run' | 'shutdown' | 'getState'>;

/** Workers that start, run and stop as one: one that ends (a fatal error) stops the others. */
export class EngineWorker {
  constructor(private readonly workers: Runnable[]) {}

  /** Until every worker has stopped; rejects with the first fatal error. */
  async run(): Promise<void> {
    const ended = await Promise.allSettled(this.workers.map((w) => w.run().finally(() => this.shutdown())));
    const failure = ended.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
  }

  shutdown(): void {
    for (const w of this.workers) if (w.getState() === 'RUNNING') w.shutdown();
  }

  /** The first worker's state: they start and stop together. */
  getState(): State {
    return this.workers[0].getState();
  }

  /** Runs the workers until `until` settles, then stops them. */
  async runUntil<R>(until: Promise<R>): Promise<R> {
    const running = this.run();
    try {
      return await until;
    } finally {
      this.shutdown();
      await running;
    }
  }
}

/**
 * A worker for the task queue of pinned integrations: activities only (discovery and tool calls
 * of integrations whose servers need this machine), no workflows.
 */
export async function createPinnedMcpWorker(
  options: Omit<EngineWorkerOptions, 'workflowBundlePath' | 'code'> & { version?: WorkerVersion },
): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.identity ? { identity: options.identity } : {}),
    // The same version as the engine's worker beside it: a pinned run's activities on this queue reach this build.
    ...deploymentOptions(options.version),
    activities: createActivities({ ...options.deps, ...(options.version ? { version: options.version } : {}) }),
    shutdownGraceTime: '10s',
    shutdownForceTime: '30s',
  });
}

/** Said at start-up, not only to the LLM: an operator can grant CREATEROLE before anyone asks why queries fail. */
async function warnIfSourceQueryDisabled({ db, logger }: ActivityDeps): Promise<void> {
  try {
    const support = await sourceQuerySupport(db);
    if (!support.enabled) logger.warn(support.reason);
    else if (!(await canLimitTempFiles(db))) logger.warn(TEMP_FILES_UNLIMITED);
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'could not check whether source_query can isolate threads');
  }
}
