import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Usage } from '../core/messages';
import { priceUsage, type PricedUsage } from '../core/pricing';
import type { ChatMessage } from '../core/messages';
import { samplingText, type SamplingAnswer, type SamplingRequest } from '../core/sampling';
import { classifyLlmError } from '../llm/errors';
import { findAgent } from '../store/agents';
import { findRun, withRunModel } from '../store/runs/runs';
import { closeSampling, findSampling, recordSamplingAnswer } from '../store/runs/samplings';
import type { ActivityDeps } from './deps';

/**
 * Answering an MCP server's sampling request with the run's agent model: for a 2026-era server as
 * a step of the workflow of its own (sampleMessage), for a 2025-era server inside its tool call's
 * activity (activities/tools/sampling.ts). Either way the model gets only the request: the
 * server's messages and systemPrompt (core/sampling.ts), no tools, and the capped maxTokens.
 */

const HEARTBEAT_EVERY_MS = 5_000;
const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 };

export interface SampledAnswer {
  answer: SamplingAnswer;
  usage: Usage;
  /** what the answer cost by the worker's price table (PRICES_FILE), as a turn's does */
  cost: PricedUsage;
}

/** The model failed for good (its failure is not worth retrying): the server is told, and the LLM reads why. */
export class SamplingFailed extends Error {
  override name = 'SamplingFailed';
}

/**
 * One completion for the request, by the run's agent model, playing the step at `step` of a
 * scripted one. A retryable provider failure is thrown as a retryable Temporal failure.
 */
export async function askModel(
  deps: ActivityDeps, at: { runId: string; turn: number; step: number }, request: SamplingRequest, signal: AbortSignal,
): Promise<SampledAnswer> {
  const run = await findRun(deps.db, at.runId);
  const found = run && await findAgent(deps.db, run.agentId);
  const agent = found && withRunModel(found, run);
  if (!agent) throw new SamplingFailed('the run\'s agent no longer exists');
  const provider = deps.providers[agent.model.provider];
  if (!provider) throw new SamplingFailed(`no LLM provider "${agent.model.provider}" is configured on this worker`);
  const messages: ChatMessage[] = [
    ...(request.systemPrompt ? [{ role: 'system' as const, content: request.systemPrompt }] : []),
    ...request.messages.map((m): ChatMessage => (
      m.role === 'assistant' ? { role: 'assistant', content: m.text } : { role: 'user', content: m.text })),
  ];
  try {
    const response = await provider.complete({
      model: agent.model, messages, tools: [], turn: at.turn, step: at.step, maxTokens: request.maxTokens,
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}), signal,
    });
    const model = agent.model.provider === 'scripted' ? 'scripted' : agent.model.name;
    // Only the text: a tool call in the reply is never executed, nor passed on.
    return {
      answer: {
        role: 'assistant', model, content: { type: 'text', text: response.text },
        stopReason: response.finishReason === 'length' ? 'maxTokens' : 'endTurn',
      },
      usage: response.usage,
      cost: priceUsage(deps.prices, agent.model, response.usage),
    };
  } catch (err) {
    if (signal.aborted) throw err;
    const failure = classifyLlmError(err);
    if (!failure.retryable) throw new SamplingFailed(failure.message);
    throw ApplicationFailure.create({
      message: failure.message, type: failure.type, nonRetryable: false,
      ...(failure.retryAfterMs !== undefined ? { nextRetryDelay: failure.retryAfterMs } : {}),
    });
  }
}

export interface SampleMessageInput {
  runId: string;
  turn: number;
  samplingId: string;
  /** the run's step cursor for this answer */
  step: number;
}

/** What the workflow keeps: the usage to add to the run's, or why the call cannot go on. */
export interface SampleMessageOutput {
  usage: Usage;
  /** USD the answer cost, when its model is priced: the run's maxCostUsd counts it */
  costUsd?: number;
  refused?: string;
}

/** A priced answer's cost, for the workflow's budget; nothing for an unpriced one. */
export const costOf = (costUsd: number | null | undefined) => (costUsd !== null && costUsd !== undefined ? { costUsd } : {});

export function createSamplingActivities(deps: ActivityDeps) {
  return {
    /**
     * A 2026-era server's sampling request, once every question of its round is answered (and a
     * reviewer approved it, with `approve`): the model's answer is stored for the call that
     * carries it back. Idempotent: an answer stored before a crash is not asked again.
     */
    async sampleMessage(input: SampleMessageInput): Promise<SampleMessageOutput> {
      const sampling = await findSampling(deps.db, input.runId, input.samplingId);
      if (!sampling) return { usage: NO_USAGE, refused: samplingText.failed('the request is no longer stored') };
      if (sampling.status === 'answered') return { usage: sampling.usage ?? NO_USAGE, ...costOf(sampling.costUsd) };
      if (sampling.status === 'denied') return { usage: NO_USAGE, refused: samplingText.denied() };
      if (sampling.status !== 'approved' && !(sampling.status === 'pending' && !sampling.needsApproval)) {
        return { usage: NO_USAGE, refused: samplingText.failed(sampling.error ?? `the request was ${sampling.status.replace('_', ' ')}`) };
      }
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const { answer, usage, cost } = await askModel(deps, input, sampling.request, ctx.cancellationSignal);
        await recordSamplingAnswer(deps.db, input.samplingId, answer, usage, cost);
        deps.logger.info({ runId: input.runId, samplingId: input.samplingId, usage }, 'sampling request answered');
        return { usage, ...costOf(cost.costUsd) };
      } catch (err) {
        if (!(err instanceof SamplingFailed)) throw err;
        await closeSampling(deps.db, input.samplingId, 'failed', err.message);
        return { usage: NO_USAGE, refused: samplingText.failed(err.message) };
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}
