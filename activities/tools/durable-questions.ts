import type { InputRequiredResult, InputResponses } from '@modelcontextprotocol/client';
import { ElicitRequestSchema } from '@modelcontextprotocol/core';
import { toolResultText } from '../../core/tool-texts';
import { MAX_INPUT_ROUNDS, type RoundReply } from '../../mcp-client/tool-calls/input-rounds';
import { clearRoundAnswers, insertInputRound, readRoundAnswers, type RoundQuestion } from '../../store/runs/input-rounds';
import type { ToolRun, ToolResult } from '../tool-handler';
import type { Integration } from '../../core/integration';
import { MAX_SAMPLINGS_PER_CALL, samplingText, type SamplingRef, type SamplingRequest } from '../../core/sampling';
import { inTransaction } from '../../store/pool';
import { callSamplingCount, insertSampling } from '../../store/runs/samplings';
import { parseSamplingRequest } from './sampling';

/**
 * A 2026-era server's questions, waited for durably. The activity that got `input_required`
 * stores the round (its requestState byte for byte, each elicitation as a pending input of the
 * run) and ends; the workflow waits for the answers with no activity running (workflows/input-wait.ts);
 * a new activity, on any worker, reads the answers and calls again with them (roundReply), and
 * clears them once that call has its result (answersDelivered).
 */

/** A question larger than this is not stored: it would be shown to every reader of the run. */
const MAX_QUESTION_BYTES = 64 * 1024;

export interface ResumedRound {
  round: number;
  reply: RoundReply;
}

function question(key: string, rawParams: unknown): RoundQuestion | string {
  if (Buffer.byteLength(JSON.stringify(rawParams) ?? '') > MAX_QUESTION_BYTES) return toolResultText.mcpQuestionTooLarge();
  const parsed = ElicitRequestSchema.shape.params.safeParse(rawParams);
  if (!parsed.success) return toolResultText.mcpToolUnexpected(`malformed elicitation request ${JSON.stringify(key.slice(0, 64))}`);
  const params = parsed.data;
  return params.mode === 'url'
    ? { key, mode: 'url', message: params.message, url: params.url }
    : { key, mode: 'form', message: params.message, requestedSchema: params.requestedSchema as Record<string, unknown> };
}

/**
 * Stores the round the server asked for and says the workflow waits; more rounds (or sampling
 * requests) than allowed end the call. Elicitations become pending inputs; sampling requests
 * (only asked of an integration that allows them: input-rounds.ts refused them otherwise) are
 * stored for the workflow's sampling steps, those a reviewer decides first among the inputs waited for.
 */
/** Who stores a round: a tool call's activity, or a poll of its task (which has no call running). */
export type RoundAsker = Pick<ToolRun, 'input' | 'deps' | 'log'>;

export async function storeQuestions(
  run: RoundAsker, integration: Integration, asked: InputRequiredResult, round: number,
): Promise<ToolResult> {
  if (round > MAX_INPUT_ROUNDS) return { status: 'error', content: toolResultText.mcpTooManyRounds(MAX_INPUT_ROUNDS) };
  const { runId, toolCallId, name } = run.input;
  const timeoutMs = integration.elicitationTimeoutMs;
  const questions: RoundQuestion[] = [];
  const samplings: { key: string; request: SamplingRequest }[] = [];
  for (const [key, request] of Object.entries(asked.inputRequests ?? {})) {
    if (request.method === 'sampling/createMessage') {
      const parsed = parseSamplingRequest(request.params, integration);
      if (typeof parsed === 'string') return { status: 'error', content: toolResultText.mcpToolUnexpected(parsed) };
      samplings.push({ key, request: parsed });
      continue;
    }
    const q = question(key, request.params);
    if (typeof q === 'string') return { status: 'error', content: q };
    questions.push(q);
  }
  if (samplings.length > 0 && await callSamplingCount(run.deps.db, runId, toolCallId) + samplings.length > MAX_SAMPLINGS_PER_CALL) {
    return { status: 'error', content: samplingText.tooMany(MAX_SAMPLINGS_PER_CALL) };
  }
  const needsApproval = integration.sampling === 'approve';
  const stored = await inTransaction(run.deps.db, async (tx) => {
    const r = await insertInputRound(tx, { runId, toolCallId, round, requestState: asked.requestState, questions, waitMs: timeoutMs });
    const refs: SamplingRef[] = [];
    for (const s of samplings) {
      const row = await insertSampling(tx, {
        runId, toolCallId, turn: run.input.turn, name, integrationId: integration.id, roundId: r.roundId,
        requestKey: s.key, request: s.request, needsApproval, waitMs: timeoutMs,
      });
      refs.push({ samplingId: row.samplingId, needsApproval });
    }
    return { ...r, samplings: refs };
  });
  const inputIds = [...stored.inputIds, ...stored.samplings.filter((s) => s.needsApproval).map((s) => s.samplingId)];
  const { roundId, samplings: refs } = stored;
  run.log.info({ roundId, round, inputIds, samplings: refs.length }, 'the MCP server asks for input; the call waits durably');
  return {
    status: 'ok', content: '',
    waiting: { roundId, inputIds, round, timeoutMs, ...(refs.length > 0 ? { samplings: refs } : {}) },
  };
}

/** The answers of a round, for the call that carries them back. */
export async function roundReply(run: ToolRun, roundId: string): Promise<ResumedRound | ToolResult> {
  const answers = await readRoundAnswers(run.deps.db, roundId);
  if (!answers.answered) {
    return { status: 'error', content: toolResultText.mcpToolUnexpected(`the answers of round ${roundId} are missing`) };
  }
  run.log.info({ roundId, round: answers.round, keys: Object.keys(answers.responses) }, 'input relayed to the MCP server');
  return {
    round: answers.round,
    // Elicit results: the content was checked against the requested schema when it was answered.
    reply: {
      inputResponses: answers.responses as InputResponses,
      ...(answers.requestState !== undefined ? { requestState: answers.requestState } : {}),
    },
  };
}

/**
 * The call that carried the answers has its result: their content goes. Not before, so that a
 * retry after a crash (a tool safe to repeat) carries them again.
 */
export async function answersDelivered(run: ToolRun, roundId: string): Promise<void> {
  await clearRoundAnswers(run.deps.db, roundId);
}
