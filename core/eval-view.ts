import { z } from 'zod';
import { modelSchema } from './agent-model';
import { REPLAY_TOOLS } from './replay';
import { MAX_EVAL_RUNS, MAX_EVAL_THREADS, type EvalStatus } from './eval';
import { runStatus } from './run-view';

/**
 * The eval's request and objects (POST/GET /v1/evals) as schemas: the API checks and documents
 * them (/docs), the CLI reads with their inferred types. docs/time-travel.md says what they mean.
 */

const id = z.string().min(1).max(128);
const timestamp = z.string().meta({ format: 'date-time' });
const toolName = z.string().min(1).max(256);

/** Where a replay's tool calls get their results (as POST /v1/runs/:id/replay takes it). */
export const replayToolsSchema = z.enum(REPLAY_TOOLS);

/** Why `source` is not a regular expression, or undefined when it is one (compiling never backtracks). */
export function patternProblem(source: string): string | undefined {
  try {
    new RegExp(source);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

export const expectationSchema = z.strictObject({
  outputContains: z.union([z.string().min(1).max(10_000), z.array(z.string().min(1).max(10_000)).min(1).max(32)]).optional()
    .describe('text the output must contain (each of a list), case-sensitive'),
  outputMatches: z.string().min(1).max(1_000).superRefine((source, ctx) => {
    const problem = patternProblem(source);
    if (problem) ctx.addIssue({ code: 'custom', message: `not a regular expression: ${problem}` });
  }).optional().describe('a regular expression (JavaScript syntax, no flags) the output must match; a search that takes over 1 s fails'),
  toolsCalled: z.array(toolName).max(64).optional().describe('tools (as the LLM saw them, e.g. fx__count) the replay must call'),
  toolsNotCalled: z.array(toolName).max(64).optional().describe('tools the replay must not call'),
  maxTurns: z.int().min(1).max(10_000).optional().describe('the most LLM turns the replay may take'),
  stopReason: z.enum(['answer', 'max_turns', 'budget', 'cancelled', 'error']).optional()
    .describe('how the replay must stop; without it, a replay that failed or was cancelled fails'),
}).meta({ id: 'Expectation' });

export const createEvalBody = z.strictObject({
  name: z.string().min(1).max(200),
  runIds: z.array(id).min(1).max(MAX_EVAL_RUNS).optional().describe('the runs to replay, each on a new thread of its own'),
  threadIds: z.array(id).min(1).max(MAX_EVAL_THREADS).optional()
    .describe(`threads whose runs to replay, in their order, each thread's on one new thread (at most ${MAX_EVAL_RUNS} runs in all)`),
  agentId: id.optional().describe('the agent (id or name) the replays run with; without agentId and model, each run\'s own agent'),
  model: modelSchema.optional()
    .describe('the model the replays run with, in place of their agent\'s; baseUrl and apiKeyEnv are the operator\'s'),
  tools: replayToolsSchema.describe('recorded: nothing outside the engine is contacted; live: the tools are called; '
    + 'recorded-then-live: recorded results where there are some'),
  expect: expectationSchema.optional().describe('what every replay is expected to do'),
  expectByRun: z.record(id, expectationSchema).optional()
    .refine((m) => m === undefined || Object.keys(m).length <= MAX_EVAL_RUNS, `at most ${MAX_EVAL_RUNS} runs`)
    .describe('what the replay of each run (by its id) is expected to do, in place of expect'),
}).superRefine((body, ctx) => {
  if ((body.runIds === undefined) === (body.threadIds === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['runIds'], message: 'give runIds or threadIds, not both' });
  }
  if (body.agentId !== undefined && body.model !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['model'], message: 'give agentId or model, not both' });
  }
  const seen = new Set<string>();
  (body.runIds ?? body.threadIds ?? []).forEach((value, i) => {
    if (seen.has(value)) ctx.addIssue({ code: 'custom', path: [body.runIds ? 'runIds' : 'threadIds', i], message: 'named twice' });
    seen.add(value);
  });
});

export type CreateEvalRequest = z.infer<typeof createEvalBody>;

const evalStatus = z.enum(['running', 'completed', 'failed', 'cancelled'] satisfies EvalStatus[]);
const usage = z.object({ inputTokens: z.int(), outputTokens: z.int() });
const callSeen = z.object({ name: z.string(), arguments: z.string().optional().describe('as JSON text, cut at 2000 characters') });
const originalAndReplay = <T extends z.ZodType>(value: T) => z.object({ original: value, replay: value });

export const evalRunSchema = z.object({
  runId: id.describe('the run replayed'),
  replayRunId: id.nullable().describe('its replay (a run with this evalId); null until it starts'),
  status: z.union([runStatus, z.literal('pending')]).describe('the replay\'s; pending until it starts'),
  passed: z.boolean().nullable().describe('null until the replay is scored'),
  failed: z.array(z.string()).describe('the expectations the replay failed, each named with what failed, e.g. "toolsCalled: fx__count"'),
  output: originalAndReplay(z.string().nullable()).describe('each cut at 4000 characters'),
  toolCalls: z.object({
    added: z.array(callSeen), removed: z.array(callSeen),
    changed: z.array(z.object({ name: z.string(), from: z.string().optional(), to: z.string().optional() })),
  }).describe('how the replay\'s tool calls differ from the original\'s (by name and arguments)'),
  turns: originalAndReplay(z.int()),
  usage: originalAndReplay(usage),
}).meta({ id: 'EvalRun' });

const totals = z.object({
  runs: z.int(), scored: z.int(), passed: z.int(), failed: z.int(),
  turns: originalAndReplay(z.int()), usage: originalAndReplay(usage),
});

export const evalSummarySchema = z.object({
  id, name: z.string(), status: evalStatus, tools: replayToolsSchema, agentId: id.nullable(),
  error: z.object({ type: z.string(), message: z.string() }).nullable().describe('a failed eval: why'),
  startedBy: z.object({ principalId: z.string(), name: z.string() }).nullable(),
  createdAt: timestamp, endedAt: timestamp.nullable(),
}).meta({ id: 'EvalSummary' });

export const evalViewSchema = evalSummarySchema.extend({
  totals, runs: z.array(evalRunSchema),
}).meta({ id: 'Eval' });

export const evalAcceptedSchema = z.object({ id, status: evalStatus }).meta({ id: 'EvalAccepted' });

export type EvalRunView = z.infer<typeof evalRunSchema>;
export type EvalSummary = z.infer<typeof evalSummarySchema>;
export type EvalView = z.infer<typeof evalViewSchema>;
