import { argumentsText, decisionPath, type PendingApproval } from './approval-prompt';
import { EXIT, type CliContext } from './commands';

const approvalLine = (p: PendingApproval & { runId: string }) =>
  `${p.runId}  ${p.toolCallId}  ${p.name} ${argumentsText(p.arguments)}  expires ${p.expiresAt}`;

/** Every tool call waiting for approval, across the runs that wait (GET /v1/runs?waiting=true). */
export async function approvalsListCommand(ctx: CliContext, opts: { json: boolean }): Promise<number> {
  const page = await ctx.api.get<{ runs: { id: string }[] }>('/v1/runs?waiting=true&limit=100');
  const pending: (PendingApproval & { runId: string })[] = [];
  for (const { id } of page.runs) {
    const run = await ctx.api.get<{ pendingApprovals?: PendingApproval[] }>(`/v1/runs/${encodeURIComponent(id)}`);
    for (const p of run.pendingApprovals ?? []) pending.push({ runId: id, ...p });
  }
  if (opts.json) ctx.out.write(`${JSON.stringify({ approvals: pending }, null, 2)}\n`);
  else if (pending.length === 0) ctx.err.write('no tool call waits for approval\n');
  else for (const p of pending) ctx.out.write(`${approvalLine(p)}\n`);
  return EXIT.ok;
}

export async function decideCommand(
  ctx: CliContext, opts: { decision: 'approve' | 'deny'; runId: string; toolCallId: string; reason?: string; json: boolean },
): Promise<number> {
  const run = await ctx.api.post<unknown>(decisionPath(opts.runId, opts.toolCallId), {
    decision: opts.decision, ...(opts.reason ? { reason: opts.reason } : {}),
  });
  if (opts.json) ctx.out.write(`${JSON.stringify(run, null, 2)}\n`);
  ctx.err.write(`${opts.decision === 'approve' ? 'approved' : 'denied'} ${opts.toolCallId} of run ${opts.runId}\n`);
  return EXIT.ok;
}
