import { superviseRun, type CliContext } from './commands';

/**
 * `agent-engine runs fork <run> --at <turn>`: a new run on a new thread from the run's state at
 * the start of that turn (docs/time-travel.md), on the run's agent or --agent's; then, as `run`
 * does, its answer (live with --follow).
 */
export async function runsForkCommand(
  ctx: CliContext, opts: { runId: string; atTurn: number; agent?: string; follow: boolean; json: boolean },
): Promise<number> {
  const { id, threadId } = await ctx.api.post<{ id: string; threadId: string }>(`/v1/runs/${encodeURIComponent(opts.runId)}/fork`, {
    atTurn: opts.atTurn, ...(opts.agent ? { agentId: opts.agent } : {}),
  });
  ctx.err.write(`run ${id} on thread ${threadId} (forked from run ${opts.runId} at turn ${opts.atTurn})\n`);
  return superviseRun(ctx, id, opts);
}
