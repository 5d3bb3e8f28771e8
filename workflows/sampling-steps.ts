import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { addUsage, type Usage } from '../core/messages';
import type { RunState } from '../core/run';
import type { InputWait, SampledDuringCall } from '../core/tool-call';
import type { InputAnswers } from './input-wait';
// A sampling answer asks the model like a turn does: the same bounds and retries.
import { llmOptions } from './llm-options';

type Activities = ReturnType<typeof createActivities>;

/**
 * What the run counts of its model's work besides its turns: the step cursor (how many model steps,
 * turns and sampling answers, it has played: a scripted model plays the step at it, and a retried
 * activity is given the same one) and the usage and cost sampling adds to the run's.
 */
export interface ModelLedger {
  steps: number;
  usage: Usage;
  /** the run's own priced cost, which priced sampling answers add to */
  costUsd: number;
}

/** The run's ledger: its step cursor from `steps`, its usage and cost kept in the run's state. */
export function modelLedger(state: RunState, steps: number): ModelLedger {
  return {
    steps,
    get usage() { return state.usage; },
    set usage(u) { state.usage = u; },
    get costUsd() { return state.costUsd ?? 0; },
    set costUsd(c) { state.costUsd = c; },
  };
}

/**
 * A 2026-era server's sampling requests of one round, once its questions are answered (and its
 * requests approved, with `approve`): each is a step of the workflow, an activity of its own, in
 * the server's order. One that cannot be answered (denied, or the model failed for good) ends the call.
 */
export async function answerSamplings(
  ledger: ModelLedger, ref: { runId: string; turn: number; name: string }, wait: InputWait,
): Promise<InputAnswers> {
  for (const { samplingId } of wait.samplings ?? []) {
    const out = await proxyActivities<Activities>({ ...llmOptions, summary: `sampling for ${ref.name} (${samplingId})` })
      .sampleMessage({ runId: ref.runId, turn: ref.turn, samplingId, step: ledger.steps });
    // Only an answer the model gave plays a step: a denied request leaves the cursor where it was.
    if (!out.refused) ledger.steps++;
    ledger.usage = addUsage(ledger.usage, out.usage);
    if (out.costUsd) ledger.costUsd += out.costUsd;
    if (out.refused) return { answered: false, content: out.refused };
  }
  return { answered: true };
}

/** A 2025-era server's sampling, answered inside its call: the steps it played and its usage count for the run. */
export function countSampledDuringCall(ledger: ModelLedger, sampled: SampledDuringCall | undefined): void {
  if (!sampled) return;
  ledger.steps += sampled.steps;
  ledger.usage = addUsage(ledger.usage, sampled.usage);
  if (sampled.costUsd) ledger.costUsd += sampled.costUsd;
}
