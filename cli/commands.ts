import { ApiError, type ApiClient } from './api-client';
import { approvalPrompter } from './approval-prompt';
import { followRun } from './event-stream';
import { promptForInput } from './input-prompt';
import { callerToolCallLine } from './caller-tool-line';
import { agentNames, integrationNames } from './names';
import { ProgressDisplay, RunEventRenderer, type Output } from './progress';
import { printRun, printRunList, type RunPage } from './render';
import type { RunView } from '../core/run-view';

/** Exit codes scripts can rely on (documented in docs/cli.md and in --help). */
export const EXIT = { ok: 0, runNotCompleted: 1, usage: 2, api: 3, detached: 130 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** What commands need from the outside world; main.ts builds it from the process. */
export interface CliContext {
  api: ApiClient;
  out: Output;
  err: Output;
  /** true when a person can answer a question on stdin */
  interactive: boolean;
  /** asks a question; null when interrupted again (Ctrl-C while asking) */
  ask(question: string): Promise<string | null>;
  /** registers a Ctrl-C handler; returns its removal */
  onInterrupt(handler: () => void): () => void;
  readFile(path: string): Promise<string>;
  /** opens a URL in the person's browser when the machine has one; false when it could not */
  openUrl?(url: string): Promise<boolean>;
}

interface Agent { id: string; name: string; model: { provider?: string }; maxTurns: number }

/** The API accepts a name wherever an id goes; this only turns its 404 into a usage hint. */
async function resolveAgent(api: ApiClient, nameOrId: string): Promise<Agent> {
  try {
    return await api.get<Agent>(`/v1/agents/${encodeURIComponent(nameOrId)}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      throw new UsageError(`No agent named or with id "${nameOrId}" (see: agent-engine agents list)`);
    }
    throw err;
  }
}

const RUN_WAIT_MS = 30_000;

/** `--caller-tools <file>`: a JSON array of {name, description?, inputSchema}, sent as the run's callerTools. */
async function readCallerTools(ctx: CliContext, file: string): Promise<unknown[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await ctx.readFile(file));
  } catch (err) {
    throw new UsageError(`--caller-tools ${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new UsageError(`--caller-tools ${file}: must hold a JSON array of {name, description, inputSchema}`);
  return parsed;
}

type RunOptions = { agent?: string; input: string; thread?: string; follow: boolean; json: boolean; callerTools?: string };
type StartedRun = { id: string; threadId: string };

/**
 * Starts the run: without a thread, a one-shot run (its thread is made with it); on a thread, its
 * own agent's unless --agent names another, which is said, since the thread stays its agent's.
 */
async function startRun(ctx: CliContext, opts: RunOptions): Promise<{ runId: string; threadId: string }> {
  const declared = opts.callerTools ? { callerTools: await readCallerTools(ctx, opts.callerTools) } : {};
  if (!opts.thread) {
    const agent = await resolveAgent(ctx.api, opts.agent!);
    const { id: runId, threadId } = await ctx.api.post<StartedRun>('/v1/runs', { agentId: agent.id, input: opts.input, ...declared });
    ctx.err.write(`run ${runId} on thread ${threadId} (agent ${agent.name})\n`);
    return { runId, threadId };
  }
  const path = `/v1/threads/${encodeURIComponent(opts.thread)}`;
  const owner = await resolveAgent(ctx.api, (await ctx.api.get<{ agentId: string }>(path)).agentId);
  const agent = opts.agent ? await resolveAgent(ctx.api, opts.agent) : owner;
  const { id: runId, threadId } = await ctx.api.post<StartedRun>(`${path}/runs`, {
    input: opts.input, ...(opts.agent ? { agentId: agent.id } : {}), ...declared,
  });
  const whose = agent.id === owner.id ? '' : `; the thread is ${owner.name}'s`;
  ctx.err.write(`run ${runId} on thread ${threadId} (agent ${agent.name}${whose})\n`);
  return { runId, threadId };
}

export async function runCommand(ctx: CliContext, opts: RunOptions): Promise<number> {
  const { runId } = await startRun(ctx, opts);
  return superviseRun(ctx, runId, opts);
}

/**
 * A run once started, to its end: followed live with --follow (approvals and questions asked on
 * a terminal), then its answer on stdout, or the run as JSON; Ctrl-C as interruptHandler says.
 */
export async function superviseRun(ctx: CliContext, runId: string, opts: { follow: boolean; json: boolean }): Promise<number> {
  const display = new ProgressDisplay(ctx.err);
  const stop = new AbortController();
  let detached = false;
  const removeInterrupt = ctx.onInterrupt(interruptHandler(ctx, runId, display, () => {
    detached = true;
    stop.abort();
  }));
  try {
    if (opts.follow) {
      const renderer = new RunEventRenderer(display);
      const approvals = approvalPrompter(ctx, ctx.api, runId, display);
      for await (const event of followRun(ctx.api, runId, stop.signal)) {
        if (event.event === 'input_requested') {
          await promptForInput(ctx, display, runId, event.data);
          continue;
        }
        if (event.event === 'input_resolved') continue;
        if (event.event === 'caller_tool_call') display.line(callerToolCallLine(runId, event.data));
        renderer.render(event);
        approvals(event);
      }
    } else {
      display.setStatus('running');
    }
    const run = await waitForEnd(ctx.api, runId, stop.signal);
    display.stop();
    if (detached || !run) {
      ctx.err.write(`detached: the run goes on (agent-engine runs show ${runId})\n`);
      return EXIT.detached;
    }
    if (opts.json) ctx.out.write(`${JSON.stringify(run, null, 2)}\n`);
    else if (run.status === 'completed') ctx.out.write(`${run.output ?? ''}\n`);
    else ctx.err.write(`run ${run.status}${run.error ? `: ${run.error.type}: ${run.error.message}` : ''}\n`);
    return run.status === 'completed' ? EXIT.ok : EXIT.runNotCompleted;
  } catch (err) {
    if (detached) {
      display.stop();
      ctx.err.write(`detached: the run goes on (agent-engine runs show ${runId})\n`);
      return EXIT.detached;
    }
    throw err;
  } finally {
    display.stop();
    removeInterrupt();
  }
}

/**
 * Ctrl-C asks whether to cancel the run; without a person at stdin it cancels without asking.
 * Ctrl-C while the question is open (or a third Ctrl-C after a cancel) detaches: the CLI exits and the run goes on.
 */
function interruptHandler(ctx: CliContext, runId: string, display: ProgressDisplay, detach: () => void): () => void {
  let asking = false;
  let cancelRequested = false;
  const cancel = async () => {
    cancelRequested = true;
    ctx.err.write(`cancelling run ${runId}…\n`);
    try {
      await ctx.api.post(`/v1/runs/${encodeURIComponent(runId)}/cancel`);
    } catch (err) {
      ctx.err.write(`could not cancel: ${(err as Error).message}\n`);
    }
  };
  return () => {
    if (asking || cancelRequested) return detach();
    if (!ctx.interactive) return void cancel();
    asking = true;
    display.pause();
    void ctx.ask(`Cancel run ${runId}? [y/N] `).then(async (answer) => {
      asking = false;
      if (answer === null) return detach();
      if (/^\s*y/i.test(answer)) await cancel();
      else ctx.err.write('continuing; Ctrl-C again to be asked again\n');
      display.resume();
    });
  };
}

async function waitForEnd(api: ApiClient, runId: string, signal: AbortSignal): Promise<RunView | undefined> {
  while (!signal.aborted) {
    try {
      const run = await api.get<RunView>(`/v1/runs/${encodeURIComponent(runId)}?waitMs=${RUN_WAIT_MS}`, signal);
      if (run.status !== 'running') return run;
    } catch (err) {
      if (signal.aborted) return undefined;
      throw err;
    }
  }
  return undefined;
}

interface RunsListOptions {
  thread?: string; agent?: string; parent?: string; status?: string; limit?: string; cursor?: string; json: boolean;
}

export async function runsListCommand(ctx: CliContext, opts: RunsListOptions): Promise<number> {
  const query = new URLSearchParams();
  const filters = [
    ['threadId', opts.thread], ['agentId', opts.agent], ['parentRunId', opts.parent],
    ['status', opts.status], ['limit', opts.limit], ['cursor', opts.cursor],
  ];
  for (const [key, value] of filters) {
    if (value) query.set(key as string, value);
  }
  const page = await ctx.api.get<RunPage>(`/v1/runs${query.size ? `?${query}` : ''}`);
  if (opts.json) ctx.out.write(`${JSON.stringify(page, null, 2)}\n`);
  else printRunList(ctx.out, page.runs, await agentNames(ctx.api, page.runs.map((r) => r.agentId)));
  if (page.nextCursor && !opts.json) ctx.err.write(`more: agent-engine runs list --cursor ${page.nextCursor}\n`);
  return EXIT.ok;
}

export async function runsShowCommand(ctx: CliContext, opts: { id: string; json: boolean }): Promise<number> {
  const run = await ctx.api.get<RunView>(`/v1/runs/${encodeURIComponent(opts.id)}`);
  if (opts.json) ctx.out.write(`${JSON.stringify(run, null, 2)}\n`);
  else {
    const integrationIds = run.toolCalls.flatMap((c) => (c.integrationId ? [c.integrationId] : []));
    const names = { agent: await agentNames(ctx.api, [run.agentId]), integration: await integrationNames(ctx.api, integrationIds) };
    printRun(ctx.out, run, names);
  }
  return EXIT.ok;
}

export async function agentsListCommand(ctx: CliContext, opts: { json: boolean }): Promise<number> {
  const { agents } = await ctx.api.get<{ agents: Agent[] }>('/v1/agents');
  if (opts.json) ctx.out.write(`${JSON.stringify(agents, null, 2)}\n`);
  else if (agents.length === 0) ctx.err.write('no agents yet\n');
  else for (const a of agents) ctx.out.write(`${a.id}  ${a.name}  ${a.model.provider ?? '?'}  maxTurns=${a.maxTurns}\n`);
  return EXIT.ok;
}

export async function integrationsImportCommand(ctx: CliContext, opts: { file: string; json: boolean }): Promise<number> {
  let config: unknown;
  try {
    config = JSON.parse(await ctx.readFile(opts.file));
  } catch (err) {
    throw new UsageError(`Cannot read ${opts.file} as JSON: ${(err as Error).message}`);
  }
  let result: { integrations?: { id: string; name: string; transport?: { type?: string } }[] };
  try {
    result = await ctx.api.post('/v1/integrations/import', config);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && /route/i.test(String(err.problem?.detail ?? ''))) {
      throw new ApiError(
        'This API cannot import integrations yet (POST /v1/integrations/import is not there); update the engine, '
        + 'or create them one by one with POST /v1/integrations',
        404,
      );
    }
    throw err;
  }
  const integrations = result.integrations ?? [];
  if (opts.json) ctx.out.write(`${JSON.stringify(result, null, 2)}\n`);
  else for (const i of integrations) ctx.out.write(`${i.id}  ${i.name}  ${i.transport?.type ?? ''}\n`);
  ctx.err.write(`imported ${integrations.length} integration(s)\n`);
  return EXIT.ok;
}
