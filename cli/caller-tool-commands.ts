import { EXIT, type CliContext } from './commands';

/** `agent-engine tool-result <run id> <tool call id> "<result>" [--error]`: the caller's answer, as text. */
export async function toolResultCommand(
  ctx: CliContext, opts: { runId: string; toolCallId: string; content: string; error: boolean; json: boolean },
): Promise<number> {
  const path = `/v1/runs/${encodeURIComponent(opts.runId)}/tool-results/${encodeURIComponent(opts.toolCallId)}`;
  const answered = await ctx.api.post<unknown>(path, { content: opts.content, ...(opts.error ? { isError: true } : {}) });
  if (opts.json) ctx.out.write(`${JSON.stringify(answered, null, 2)}\n`);
  ctx.err.write(`answered ${opts.toolCallId} of run ${opts.runId}${opts.error ? ' (as an error)' : ''}\n`);
  return EXIT.ok;
}
