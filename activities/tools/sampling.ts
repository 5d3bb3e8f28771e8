import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import type { CreateMessageRequest } from '@modelcontextprotocol/client';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/core';
import type { Integration } from '../../core/integration';
import { addUsage, type Usage } from '../../core/messages';
import { MAX_SAMPLINGS_PER_CALL, samplingRequest, samplingText, type SamplingRequest } from '../../core/sampling';
import {
  callSamplingCount, closeSampling, findSampling, insertSampling, recordSamplingAnswer, type SamplingRecord,
} from '../../store/runs/samplings';
import type { SampleHandler } from '../../mcp-client/connections/connect';
import { askModel, SamplingFailed } from '../sampling';
import type { ToolRun } from '../tool-handler';
import type { CallClock } from './elicitation';
import { waitForRow } from './row-wait';

/**
 * Sampling during a 2025-era server's tool call: the request arrives over the connection, and is
 * answered here, inside the call's activity (the protocol gives no other way), with the clock
 * paused while a reviewer decides and the model answers. What the call did is kept in `ledger`:
 * the usage the run adds, the steps of the run's step cursor it played, and a refusal the LLM
 * reads instead of the server's result (a reviewer denied, or the model failed for good).
 */

export interface SamplingLedger {
  usage: Usage;
  /** USD the priced answers cost */
  costUsd: number;
  steps: number;
  /** what the LLM reads instead of the call's result */
  refusal?: string;
}

/** Parses and bounds a request; a string says why it is refused. */
export function parseSamplingRequest(rawParams: unknown, integration: Integration): SamplingRequest | string {
  const parsed = CreateMessageRequestSchema.shape.params.safeParse(rawParams);
  if (!parsed.success) return 'a malformed sampling request';
  return samplingRequest(parsed.data, integration.samplingMaxTokens);
}

/** Waits for a reviewer's decision until `deadline`; the status it ends with (timed out, or withdrawn on abort). */
function awaitDecision(run: ToolRun, samplingId: string, deadline: number, signal: AbortSignal): Promise<SamplingRecord['status']> {
  const { db } = run.deps;
  return waitForRow(run, deadline, signal, {
    read: async () => {
      const row = await findSampling(db, run.input.runId, samplingId);
      return row && row.status === 'pending' ? undefined : row?.status ?? 'cancelled';
    },
    close: async (why) => {
      const status = why === 'withdrawn' ? 'cancelled' : 'timed_out';
      return (await closeSampling(db, samplingId, status)) ? status : undefined;
    },
  });
}

const refuse = (message: string) => new ProtocolError(-1, message);

export function samplingHandler(
  run: ToolRun, integration: Integration, clock: CallClock, callSignal: AbortSignal,
): { handler: SampleHandler; ledger: SamplingLedger } {
  const ledger: SamplingLedger = { usage: { inputTokens: 0, outputTokens: 0 }, costUsd: 0, steps: 0 };
  const { input } = run;
  const handler: SampleHandler = async (rawParams: CreateMessageRequest['params'], requestSignal) => {
    if (ledger.refusal) throw refuse(ledger.refusal);
    if (await callSamplingCount(run.deps.db, input.runId, input.toolCallId) >= MAX_SAMPLINGS_PER_CALL) {
      ledger.refusal = samplingText.tooMany(MAX_SAMPLINGS_PER_CALL);
      throw refuse(ledger.refusal);
    }
    const request = parseSamplingRequest(rawParams, integration);
    if (typeof request === 'string') throw new ProtocolError(ProtocolErrorCode.InvalidParams, request);
    const signal = AbortSignal.any([callSignal, requestSignal]);
    const needsApproval = integration.sampling === 'approve';
    clock.pause();
    try {
      const waitMs = Math.max(1, clock.budgetMs());
      const row = await insertSampling(run.deps.db, {
        runId: input.runId, toolCallId: input.toolCallId, turn: input.turn, name: input.name, integrationId: integration.id,
        request, needsApproval, waitMs,
      });
      run.log.info({ samplingId: row.samplingId, needsApproval }, 'the MCP server asks to sample the model');
      if (needsApproval) {
        const status = await awaitDecision(run, row.samplingId, Date.now() + waitMs, signal);
        if (status === 'denied') ledger.refusal = samplingText.denied();
        if (status !== 'approved') {
          throw refuse(status === 'denied' ? samplingText.denied() : `Sampling request ${status.replace('_', ' ')}`);
        }
      }
      const step = (input.step ?? input.turn) + ledger.steps;
      try {
        const { answer, usage, cost } = await askModel(run.deps, { runId: input.runId, turn: input.turn, step }, request, signal);
        ledger.steps++;
        ledger.usage = addUsage(ledger.usage, usage);
        ledger.costUsd += cost.costUsd ?? 0;
        // The answer goes straight back over the connection: only its status, usage and cost are kept.
        await recordSamplingAnswer(run.deps.db, row.samplingId, null, usage, cost);
        return { ...answer };
      } catch (err) {
        if (signal.aborted) throw err;
        const message = err instanceof SamplingFailed ? err.message : (err as Error).message;
        await closeSampling(run.deps.db, row.samplingId, 'failed', message);
        // The worker cannot reach the model: the server is told, and the LLM reads why.
        ledger.refusal = samplingText.failed(message);
        throw new ProtocolError(ProtocolErrorCode.InternalError, ledger.refusal);
      }
    } finally {
      clock.resume();
    }
  };
  return { handler, ledger };
}
