import type { Usage } from '../../core/messages';
import type { PricedUsage } from '../../core/pricing';
import type { WorkerVersion } from '../../core/worker-version';
import type { Queryable } from '../pool';
import type { Write } from './writes';

/** A run's turns (run_turns): attempts, completion and usage per LLM turn. */

/** Counts LLM invocations per turn, so that re-executions after a crash are visible. */
export const turnAttemptWrite = (runId: string, turn: number): Write => ({
  text: `INSERT INTO run_turns (run_id, turn, attempts) VALUES ($1, $2, 1)
     ON CONFLICT (run_id, turn) DO UPDATE SET attempts = run_turns.attempts + 1`,
  values: [runId, turn],
});

/** What a turn's model was, and what its tokens cost (core/pricing.ts); `costUsd` null: the model is not priced. */
export type TurnCost = PricedUsage;

/** Written whole, not as an update: the turn's start (its attempt count) may have been lost with its unflushed commit (PROGRESS_ONLY). */
export const turnCompletedWrite = (runId: string, turn: number, usage: Usage, toolCallCount: number, cost: TurnCost): Write => ({
  text: `INSERT INTO run_turns (run_id, turn, attempts, input_tokens, output_tokens, tool_call_count, completed_at,
                             cached_input_tokens, provider, model, cost_usd)
     VALUES ($1, $2, 1, $3, $4, $5, now(), $6, $7, $8, $9)
     ON CONFLICT (run_id, turn) DO UPDATE SET input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
       tool_call_count = EXCLUDED.tool_call_count, completed_at = EXCLUDED.completed_at,
       cached_input_tokens = EXCLUDED.cached_input_tokens, provider = EXCLUDED.provider, model = EXCLUDED.model,
       cost_usd = EXCLUDED.cost_usd`,
  values: [
    runId, turn, usage.inputTokens, usage.outputTokens, toolCallCount, usage.cachedInputTokens ?? 0,
    cost.provider, cost.model, cost.costUsd,
  ],
});

export async function runTurns(db: Queryable, runId: string): Promise<{ turn: number; attempts: number; completed: boolean }[]> {
  const { rows } = await db.query<{ turn: number; attempts: number; completed: boolean }>(
    'SELECT turn, attempts, completed_at IS NOT NULL AS completed FROM run_turns WHERE run_id = $1 ORDER BY turn', [runId],
  );
  return rows;
}

/**
 * The Worker Deployment build the run's turn runs on (migration 22), written with the turn's end:
 * after an upgrade (workflows/upgrade.ts) the run shows the build it moved to.
 */
export const runVersionWrite = (runId: string, version: WorkerVersion): Write => ({
  text: `UPDATE runs SET deployment_name = $2, build_id = $3
     WHERE id = $1 AND (deployment_name IS DISTINCT FROM $2 OR build_id IS DISTINCT FROM $3)`,
  values: [runId, version.deploymentName, version.buildId],
});
