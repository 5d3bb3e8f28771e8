import type { EvalRunView, EvalView } from '../core/eval-view';
import { EXIT, UsageError, type CliContext } from './commands';
import { table } from './render';

/**
 * `agent-engine eval`: starts an eval, waits for it, prints each run's replay against its
 * original as a table, and exits 1 when a replay failed an expectation or the eval did not
 * complete, so that CI can run it.
 */

export interface EvalOptions {
  name: string;
  runs?: string;
  threads?: string;
  agent?: string;
  model?: string;
  tools?: string;
  expect?: string;
  expectByRun?: string;
  json: boolean;
}

const POLL_MS = 1_000;

export async function evalCommand(ctx: CliContext, opts: EvalOptions): Promise<number> {
  const body = await evalBody(ctx, opts);
  const { id } = await ctx.api.post<{ id: string }>('/v1/evals', body);
  ctx.err.write(`eval ${id} started\n`);
  let cancelled = false;
  const removeInterrupt = ctx.onInterrupt(() => {
    if (cancelled) return;
    cancelled = true;
    ctx.err.write(`cancelling eval ${id}\n`);
    void ctx.api.post(`/v1/evals/${encodeURIComponent(id)}/cancel`).catch(() => undefined);
  });
  try {
    let view = await ctx.api.get<EvalView>(`/v1/evals/${encodeURIComponent(id)}`);
    while (view.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      view = await ctx.api.get<EvalView>(`/v1/evals/${encodeURIComponent(id)}`);
    }
    if (opts.json) ctx.out.write(`${JSON.stringify(view, null, 2)}\n`);
    else printEval(ctx, view);
    return view.status === 'completed' && view.totals.failed === 0 ? EXIT.ok : EXIT.runNotCompleted;
  } finally {
    removeInterrupt();
  }
}

async function evalBody(ctx: CliContext, opts: EvalOptions): Promise<Record<string, unknown>> {
  if (Boolean(opts.runs) === Boolean(opts.threads)) throw new UsageError('eval needs --runs <id,id,…> or --threads <id,id,…>');
  if (opts.agent && opts.model) throw new UsageError('eval takes --agent or --model, not both');
  const list = (text: string) => text.split(',').map((s) => s.trim()).filter(Boolean);
  return {
    name: opts.name,
    ...(opts.runs ? { runIds: list(opts.runs) } : { threadIds: list(opts.threads ?? '') }),
    ...(opts.agent ? { agentId: opts.agent } : {}),
    ...(opts.model ? { model: await jsonOption(ctx, '--model', opts.model) } : {}),
    tools: opts.tools ?? 'recorded',
    ...(opts.expect ? { expect: await jsonOption(ctx, '--expect', opts.expect) } : {}),
    ...(opts.expectByRun ? { expectByRun: await jsonOption(ctx, '--expect-by-run', opts.expectByRun) } : {}),
  };
}

/** JSON given inline, or in a file named after `@`. */
async function jsonOption(ctx: CliContext, option: string, value: string): Promise<unknown> {
  const text = value.startsWith('@') ? await ctx.readFile(value.slice(1)) : value;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${option} must be JSON (or @file with JSON): ${(err as Error).message}`);
  }
}

const tokens = (u: { inputTokens: number; outputTokens: number }) => `${u.inputTokens}/${u.outputTokens}`;

const verdict = (r: EvalRunView) => (r.passed === null ? r.status : r.passed ? 'pass' : `FAIL ${r.failed.join('; ')}`);

/** One row per run, then what changed in its tool calls, then the totals. */
function printEval(ctx: CliContext, view: EvalView): void {
  const { totals } = view;
  ctx.out.write(`eval ${view.name} (${view.id}): ${view.status}${view.error ? ` (${view.error.message})` : ''}\n`);
  if (view.runs.length > 0) {
    table(ctx.out, [
      ['RUN', 'REPLAY', 'STATUS', 'TURNS', 'TOKENS IN/OUT', 'RESULT'],
      ...view.runs.map((r) => [
        r.runId, r.replayRunId ?? '-', r.status, `${r.turns.original}→${r.turns.replay}`,
        `${tokens(r.usage.original)}→${tokens(r.usage.replay)}`, verdict(r),
      ]),
    ]);
  }
  for (const r of view.runs) {
    const changes = [
      ...r.toolCalls.removed.map((c) => `  removed ${c.name} ${c.arguments ?? ''}`),
      ...r.toolCalls.added.map((c) => `  added   ${c.name} ${c.arguments ?? ''}`),
      ...r.toolCalls.changed.map((c) => `  changed ${c.name} ${c.from ?? ''} → ${c.to ?? ''}`),
    ];
    if (changes.length > 0) ctx.out.write(`${r.runId} tool calls:\n${changes.map((l) => `${l.trimEnd()}\n`).join('')}`);
  }
  ctx.out.write(`${totals.runs} run(s): ${totals.passed} passed, ${totals.failed} failed; `
    + `turns ${totals.turns.original}→${totals.turns.replay}, tokens ${tokens(totals.usage.original)}→${tokens(totals.usage.replay)}\n`);
}
