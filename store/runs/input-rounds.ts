import { randomUUID } from 'node:crypto';
import type { Queryable } from '../pool';
import { storableJsonText, storableText } from '../storable-text';
import type { SamplingAnswer, SamplingRef } from '../../core/sampling';
import { openAnswer, type InputAction } from './inputs';
import type { InputWait } from '../../core/tool-call';

/**
 * A round of questions a 2026-era MCP server asked by answering a tool call with `input_required`,
 * kept while the workflow waits with no activity running: the round's `requestState`, byte for
 * byte, and each elicitation request as a pending input of the run (store/runs/inputs.ts) under
 * the key the server gave it. The API answers the inputs as any other; the activity that retries
 * the call takes the answers, once, and clears them.
 */

export interface RoundQuestion {
  /** the key of the request in the server's inputRequests */
  key: string;
  mode: 'form' | 'url';
  message: string;
  requestedSchema?: Record<string, unknown>;
  url?: string;
}

export interface NewInputRound {
  runId: string;
  toolCallId: string;
  /** 1 for the call's first round of questions */
  round: number;
  requestState?: string;
  questions: RoundQuestion[];
  /** how long the questions wait for answers */
  waitMs: number;
}

export interface StoredRound {
  roundId: string;
  inputIds: string[];
}

/** The state as UTF-16 code units: every JS string, lone surrogates and NULs included, comes back unchanged. */
const stateBytes = (state: string | undefined) => (state === undefined ? null : Buffer.from(state, 'utf16le'));

export async function insertInputRound(db: Queryable, round: NewInputRound): Promise<StoredRound> {
  const roundId = `rnd_${randomUUID().replace(/-/g, '')}`;
  const questions = round.questions.map((q) => ({
    input_id: `inp_${randomUUID().replace(/-/g, '')}`, request_key: storableText(q.key), mode: q.mode, message: storableText(q.message),
    requested_schema: q.requestedSchema ? JSON.parse(storableJsonText(q.requestedSchema)) as unknown : null, url: q.url ?? null,
  }));
  // One statement: the round and its questions are stored together or not at all.
  await db.query(
    `WITH r AS (
       INSERT INTO run_input_rounds (round_id, run_id, tool_call_id, round, request_state) VALUES ($1, $2, $3, $4, $5) RETURNING round_id)
     INSERT INTO run_inputs (input_id, run_id, tool_call_id, mode, message, requested_schema, url, expires_at, round_id, request_key)
     SELECT x.input_id, $2, $3, x.mode, x.message, x.requested_schema, x.url,
       now() + make_interval(secs => $6::double precision / 1000), r.round_id, x.request_key
     FROM r, json_to_recordset($7::json) AS x(input_id text, request_key text, mode text, message text, requested_schema json, url text)`,
    [roundId, round.runId, round.toolCallId, round.round, stateBytes(round.requestState), round.waitMs, JSON.stringify(questions)],
  );
  return { roundId, inputIds: questions.map((q) => q.input_id) };
}

export type RoundResponse = { action: InputAction; content?: Record<string, unknown> } | SamplingAnswer;

export type RoundAnswers =
  | { answered: true; round: number; requestState?: string; responses: Record<string, RoundResponse> }
  | { answered: false };

/**
 * Every question's answer, keyed as the server asked them. The content stays until the call that
 * carries it back has its verdict (clearRoundAnswers): a retry of that call after its worker died
 * must find it again.
 */
export async function readRoundAnswers(db: Queryable, roundId: string): Promise<RoundAnswers> {
  const { rows: rounds } = await db.query<{ round: number; request_state: Buffer | null }>(
    'SELECT round, request_state FROM run_input_rounds WHERE round_id = $1', [roundId]);
  if (!rounds[0]) return { answered: false };
  const { rows } = await db.query<{ input_id: string; request_key: string; status: string; answer: unknown }>(
    'SELECT input_id, request_key, status, answer FROM run_inputs WHERE round_id = $1', [roundId]);
  if (rows.some((r) => !['accept', 'decline', 'cancel'].includes(r.status))) return { answered: false };
  // Sampling requests of the round, answered by the model's steps (store/runs/samplings.ts).
  const { rows: sampled } = await db.query<{ request_key: string; answer: SamplingAnswer | null }>(
    'SELECT request_key, answer FROM run_samplings WHERE round_id = $1', [roundId]);
  if (sampled.some((s) => !s.answer)) return { answered: false };
  const responses: Record<string, RoundResponse> = Object.fromEntries(rows.map((r) => [r.request_key, {
    action: r.status as InputAction, ...(r.status === 'accept' && r.answer ? { content: openAnswer(r.input_id, r.answer) } : {}),
  }]));
  for (const s of sampled) responses[s.request_key] = s.answer!;
  const state = rounds[0].request_state;
  return { answered: true, round: rounds[0].round, ...(state ? { requestState: state.toString('utf16le') } : {}), responses };
}

/** The answers' content, once the call that carried it back has its verdict. */
export async function clearRoundAnswers(db: Queryable, roundId: string): Promise<void> {
  await db.query('UPDATE run_inputs SET answer = NULL WHERE round_id = $1 AND answer IS NOT NULL', [roundId]);
  await db.query('UPDATE run_samplings SET answer = NULL WHERE round_id = $1 AND answer IS NOT NULL', [roundId]);
}

/**
 * Ends the round's questions nobody answered in time, and its sampling requests no reviewer
 * decided. True when every one had its answer or decision first (one that came with the timer wins over it).
 */
export async function closeInputRound(db: Queryable, roundId: string): Promise<boolean> {
  await db.query("UPDATE run_inputs SET status = 'expired', answered_at = now() WHERE round_id = $1 AND status = 'pending'", [roundId]);
  await db.query(
    "UPDATE run_samplings SET status = 'timed_out', resolved_at = now() WHERE round_id = $1 AND status = 'pending' AND needs_approval",
    [roundId],
  );
  const { rows } = await db.query<{ open: number }>(
    `SELECT (SELECT count(*) FROM run_inputs WHERE round_id = $1 AND status NOT IN ('accept', 'decline', 'cancel'))
      + (SELECT count(*) FROM run_samplings WHERE round_id = $1 AND needs_approval AND status = 'timed_out') AS open`, [roundId]);
  return Number(rows[0].open) === 0;
}

/** How many rounds of questions a tool call has asked. */
export async function callRoundCount(db: Queryable, runId: string, toolCallId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM run_input_rounds WHERE run_id = $1 AND tool_call_id = $2',
    [runId, toolCallId],
  );
  return rows[0].n;
}

/**
 * The round a call's activity stored before its worker died and its completion was lost: the
 * latest one of that call and number, as the workflow waits for it (undefined: none was stored).
 * Its questions wait as long as they have left; its sampling requests come in the order of their keys.
 */
export async function findCallRound(db: Queryable, runId: string, toolCallId: string, round: number): Promise<InputWait | undefined> {
  const { rows } = await db.query<{ round_id: string; inputs: string[]; samplings: SamplingRef[]; left_ms: string | null }>(
    `WITH r AS (
       SELECT round_id FROM run_input_rounds WHERE run_id = $1 AND tool_call_id = $2 AND round = $3 ORDER BY created_at DESC LIMIT 1)
     SELECT r.round_id,
       (SELECT coalesce(json_agg(i.input_id ORDER BY i.input_id), '[]') FROM run_inputs i WHERE i.round_id = r.round_id) AS inputs,
       (SELECT coalesce(json_agg(json_build_object('samplingId', s.sampling_id, 'needsApproval', s.needs_approval)
                                 ORDER BY s.request_key), '[]')
          FROM run_samplings s WHERE s.round_id = r.round_id) AS samplings,
       (SELECT GREATEST(0, floor(EXTRACT(EPOCH FROM (min(e.expires_at) - now())) * 1000))::bigint
          FROM (SELECT expires_at FROM run_inputs WHERE round_id = r.round_id
                UNION ALL SELECT expires_at FROM run_samplings WHERE round_id = r.round_id) e) AS left_ms
     FROM r`,
    [runId, toolCallId, round],
  );
  const found = rows[0];
  if (!found) return undefined;
  return {
    roundId: found.round_id, round, timeoutMs: Number(found.left_ms ?? 0),
    inputIds: [...found.inputs, ...found.samplings.filter((s) => s.needsApproval).map((s) => s.samplingId)],
    ...(found.samplings.length > 0 ? { samplings: found.samplings } : {}),
  };
}
