import { ApplicationFailure, Context } from '@temporalio/activity';
import { beginTurn, writeAnswer } from '../store/runs/lifecycle';
import { eventWrite } from '../store/runs/events';
import { runVersionWrite, turnCompletedWrite, type TurnCost } from '../store/runs/turns';
import { priceUsage, pricedModelName } from '../core/pricing';
import { runMessageWrite } from '../store/runs/transcript';
import { dropTurnDraftWrite } from '../store/runs/turn-drafts';
import { writeTogether, type Write } from '../store/runs/writes';
import { classifyLlmError, type LlmFailure } from '../llm/errors';
import type { LlmProvider, LlmResponse } from '../llm/types';
import { RESULT_PREVIEW_BYTES } from '../core/tool-texts';
import { oneLine, truncatedText, truncateUtf8, utf8Length } from '../core/truncated-text';
import type { Agent } from '../core/agent';
import { addUsage, type ChatMessage, type ToolDefinition, type Usage } from '../core/messages';
import { nativeToolKind } from '../core/native-tool-kinds';
import { streamedToolCallIds, toolCallIdsOf, uniqueToolCalls } from '../core/tool-call-ids';
import { isPlainObject } from '../core/plain-object';
import { DEFAULT_MAX_TOOL_CALLS_PER_TURN } from '../core/run-limits';
import type { Logger } from '../platform/logger';
import { emitRunSpan, startTurnGeneration, type TurnGeneration } from '../platform/tracing/run-trace';
import { secondsSince } from '../platform/metrics/worker-metrics';
import type { TurnRecord } from '../platform/metrics/llm-metrics';
import { tenantName } from '../store/tenants';
import { DEFAULT_TENANT_ID } from '../core/tenancy';
import type { ActivityDeps } from './deps';
import { refusedCallsWrites, type OfferedTool } from './refused-calls';
import { readSnapshot, threadHistory, type PrefixSnapshot } from './run-snapshots';
import { TurnText } from './text-stream';
import { turnTools, type TurnToolsInput } from './turn-tools';

export interface LlmTurnInput extends TurnToolsInput {
  agentId: string;
  turn: number;
  /** the run's step cursor (scripted models play the step at it); absent: the turn's own, turn - 1 */
  step?: number;
  eventSeq: number;
  /**
   * the usage of the run's earlier turns. Given, a reply without tool calls (the answer) ends the
   * run in the turn's own write, with run_ended at eventSeq + 2: the workflow then needs no step to end it.
   */
  usageBefore?: Usage;
  /** the most output tokens the turn may use: what the run's budget has left (core/run-limits.ts) */
  maxTokens?: number;
  /** the usage of the runs it started as sub-agents, for the result an answer writes */
  childUsage?: Usage;
  /** the run's limits.maxToolCallsPerTurn; absent: the default (core/run-limits.ts) */
  maxToolCallsPerTurn?: number;
}

type AssistantMessage = ChatMessage & { role: 'assistant' };

export interface LlmTurnOutput {
  /**
   * the calls to run, the reply's first (at most maxToolCallsPerTurn); summary: one line about a
   * native tool call, for its activity in the Web UI
   */
  toolCalls: { id: string; name: string; summary?: string }[];
  /** the reply's calls past maxToolCallsPerTurn, which the turn answered itself (their events: core/tool-call.ts refusedCallSeq) */
  refusedToolCalls?: number;
  textPreview: string;
  textBytes: number;
  usage: Usage;
  /** USD the turn cost, when its model is priced (PRICES_FILE): the run's maxCostUsd counts it */
  costUsd?: number;
}

const HEARTBEAT_EVERY_MS = 5_000;

/** How many of the reply's tool calls run: the run's limit, else the default. */
const callLimitOf = (input: LlmTurnInput) => input.maxToolCallsPerTurn ?? DEFAULT_MAX_TOOL_CALLS_PER_TURN;

/**
 * Classified once, here. Retryable failures stay retryable under the workflow's bounded policy;
 * a server's Retry-After becomes the next retry delay. The rest fail the run with their type.
 */
function toTemporalFailure(failure: LlmFailure): ApplicationFailure {
  if (!failure.retryable) return ApplicationFailure.nonRetryable(failure.message, failure.type);
  return ApplicationFailure.create({
    message: failure.message, type: failure.type, nonRetryable: false,
    ...(failure.retryAfterMs !== undefined ? { nextRetryDelay: failure.retryAfterMs } : {}),
  });
}

/** Bounded: a summary goes into workflow history with every call. */
const SUMMARY_CHARS = 80;

function summarise(message: AssistantMessage, usage: LlmTurnOutput['usage'], callLimit: number): LlmTurnOutput {
  const calls = message.toolCalls ?? [];
  return {
    ...(calls.length > callLimit ? { refusedToolCalls: calls.length - callLimit } : {}),
    toolCalls: calls.slice(0, callLimit).map((c) => {
      const native = nativeToolKind(c.name);
      if (!native) return { id: c.id, name: c.name };
      return { id: c.id, name: c.name, summary: oneLine(native.summary(isPlainObject(c.arguments) ? c.arguments : {}), SUMMARY_CHARS) };
    }),
    textPreview: truncateUtf8(message.content, RESULT_PREVIEW_BYTES),
    textBytes: utf8Length(message.content),
    usage,
  };
}

/** The provider the agent's model names, as this worker has it. */
function providerFor(deps: ActivityDeps, agent: Agent): LlmProvider {
  const provider = deps.providers[agent.model.provider];
  if (!provider) {
    throw ApplicationFailure.nonRetryable(`No LLM provider "${agent.model.provider}" is configured on this worker`, 'ProviderUnavailable');
  }
  return provider;
}

/** The run's prefix, the thread's history and the transcript, as the LLM reads them. */
async function turnMessages(deps: ActivityDeps, input: LlmTurnInput, agent: Agent, transcript: ChatMessage[]): Promise<ChatMessage[]> {
  const prefix = await readSnapshot<PrefixSnapshot>(deps.db, input.runId, 'prefix');
  const history = await threadHistory(deps.db, input.runId, input.threadId);
  return [...(prefix?.messages ?? []), ...history, ...transcript].map((m) => (
    // What the LLM sees of a tool result is capped per agent; the transcript keeps it whole.
    m.role === 'tool' ? { ...m, content: truncatedText(m.content, agent.maxToolResultBytes) } : m));
}

/** The model a turn asks, as metrics name it. */
const turnModel = (agent: Agent) => ({ provider: agent.model.provider, model: pricedModelName(agent.model) });

/**
 * The model's reply and how long it took, heartbeating while it writes; its words go to event streams
 * as they come, a call's input under the id it will be stored under (`streamedId`).
 */
async function completeTurn(
  deps: ActivityDeps, provider: LlmProvider, input: LlmTurnInput, agent: Agent, messages: ChatMessage[], tools: ToolDefinition[],
  streamedId: (providerId: string) => string,
): Promise<{ response: LlmResponse; wroteDraft: boolean; timing: Pick<TurnRecord, 'seconds' | 'firstChunkSeconds'> }> {
  const { runId, turn } = input;
  const ctx = Context.current();
  const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  const generation = startTurnGeneration({ runId, threadId: input.threadId, agentId: input.agentId, turn }, agent.model, messages, tools);
  const { metrics } = deps;
  const text = new TurnText(deps.db, deps.logger, { runId, turn, attempt: ctx.info.attempt }, metrics && ((s) => metrics.textPublished(s)));
  let response;
  const askedAt = performance.now();
  let answeredAt;
  try {
    response = await provider.complete({
      model: agent.model, messages, tools, turn, step: input.step ?? turn - 1, signal: ctx.cancellationSignal,
      ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}), onText: text.onText,
      onToolInput: (id, piece) => text.onToolInput(streamedId(id), piece),
    });
    answeredAt = performance.now();
    await text.published();
  } catch (err) {
    await text.published();
    if (!ctx.cancellationSignal.aborted) metrics?.turnFailed(turnModel(agent));
    throw turnFailure(err, ctx, generation, deps.logger, { runId, turn });
  } finally {
    clearInterval(heartbeat);
  }
  generation.end(response);
  const seconds = (answeredAt - askedAt) / 1000;
  const firstChunkSeconds = text.firstChunkAt === undefined ? undefined : (text.firstChunkAt - askedAt) / 1000;
  const timing = { seconds, ...(firstChunkSeconds === undefined ? {} : { firstChunkSeconds }) };
  return { response, wroteDraft: text.wroteDraft(), timing };
}

/** What a failed request becomes: a cancellation stays one; anything else is classified once, here. */
function turnFailure(err: unknown, ctx: Context, generation: TurnGeneration, logger: Logger, at: { runId: string; turn: number }): unknown {
  if (ctx.cancellationSignal.aborted) {
    generation.fail(err, 'Cancelled');
    return err;
  }
  const failure = classifyLlmError(err);
  generation.fail(err, failure.type);
  logger.warn({ ...at, type: failure.type, retryable: failure.retryable, retryAfterMs: failure.retryAfterMs }, failure.message);
  return toTemporalFailure(failure);
}

/**
 * The reply, the turn's end and its events, and the answers to the calls past the turn's limit:
 * written together.
 */
function replyWrites(
  deps: ActivityDeps, input: LlmTurnInput, reply: AssistantMessage, usage: Usage, out: LlmTurnOutput,
  offered: () => Map<string, OfferedTool>, cost: TurnCost,
): Write[] {
  const { runId, turn, eventSeq } = input;
  const calls = reply.toolCalls ?? [];
  return [
    runMessageWrite(runId, turn, 0, reply),
    // The turn's start again, in case its unflushed commit was lost (PROGRESS_ONLY).
    eventWrite(runId, eventSeq, 'turn_started', { turn }),
    turnCompletedWrite(runId, turn, usage, calls.length, cost),
    eventWrite(runId, eventSeq + 1, 'turn_ended', {
      turn, textPreview: truncateUtf8(reply.content, 280), toolCalls: out.toolCalls.map((c) => c.name), usage,
      ...(out.refusedToolCalls ? { refusedToolCalls: out.refusedToolCalls } : {}),
    }),
    ...refusedCallsWrites({ runId, turn, eventSeq }, calls, callLimitOf(input), offered),
    ...(deps.version ? [runVersionWrite(runId, deps.version)] : []),
  ];
}

/** The run's tenant's name for metrics (never its id), when the worker has metrics; a failed read leaves it unnamed. */
const metricsTenant = (deps: ActivityDeps, tenantId: string): Promise<string | undefined> =>
  (deps.metrics ? tenantName(deps.db, tenantId).catch(() => undefined) : Promise.resolve(undefined));

/**
 * A reply without tool calls is the run's answer: the run ends in the turn's own write.
 * `recorded` counts the turn, called right after the commit.
 */
async function writeRunAnswer(
  deps: ActivityDeps, input: LlmTurnInput, writes: Write[], reply: AssistantMessage, usage: Usage, agent: Agent, recorded: () => void,
): Promise<void> {
  const { runId, turn } = input;
  const usageWithChildren = addUsage(usage, input.childUsage);
  const ended = await writeAnswer(deps.db, writes, { runId, turn, reply, usage, usageWithChildren, seq: input.eventSeq + 2 });
  recorded();
  // Once, with the first result: a retried turn found the reply stored and wrote nothing.
  if (ended) {
    emitRunSpan({
      runId, threadId: ended.threadId, agentId: ended.agentId, status: 'completed', stopReason: 'answer', error: null,
      turns: turn, usage, output: reply.content, startTime: new Date(ended.createdAt),
    });
    deps.metrics?.runEnded({ status: 'completed', stopReason: 'answer', agent: agent.name, seconds: secondsSince(ended.createdAt) });
  }
  deps.logger.info({ runId, status: 'completed', stopReason: 'answer', turns: turn }, 'run finished');
}

/**
 * A turn once its transcript is known: asks the LLM with the run's prefix, the thread's history and
 * the transcript, writes the reply to run_messages with the turn's end, and returns what the
 * workflow needs to decide. `transcript` is the run's messages before this turn; `tenantId` the run's.
 */
export async function askLlm(
  deps: ActivityDeps, input: LlmTurnInput, agent: Agent, transcript: ChatMessage[], tenantId = DEFAULT_TENANT_ID,
): Promise<LlmTurnOutput> {
  const provider = providerFor(deps, agent);
  const [messages, tenant] = await Promise.all([turnMessages(deps, input, agent, transcript), metricsTenant(deps, tenantId)]);
  const { definitions: tools, offered } = await turnTools(deps, input);
  // The run's call ids so far: a provider's id that repeats one is renamed before the reply is stored.
  const earlierIds = toolCallIdsOf(transcript);
  const { response, wroteDraft, timing } = await completeTurn(
    deps, provider, input, agent, messages, tools, streamedToolCallIds(earlierIds, input.turn));
  const reply: AssistantMessage = {
    role: 'assistant',
    content: response.text,
    ...(response.toolCalls.length > 0 ? { toolCalls: uniqueToolCalls(response.toolCalls, earlierIds, input.turn) } : {}),
  };
  const cost = priceUsage(deps.prices, agent.model, response.usage);
  const out = { ...summarise(reply, response.usage, callLimitOf(input)), ...(cost.costUsd !== null ? { costUsd: cost.costUsd } : {}) };
  const writes = replyWrites(deps, input, reply, response.usage, out, offered, cost);
  // Once per recorded turn, right after its commit: a retry that finds the reply stored asks nothing and counts nothing.
  const recorded = () => deps.metrics?.turnRecorded({
    ...turnModel(agent), usage: response.usage, costUsd: cost.costUsd, ...(tenant ? { tenant } : {}), ...timing,
  });
  if (response.toolCalls.length > 0 || !input.usageBefore) {
    // The turn's draft goes with its end (a run's end deletes all of its drafts).
    await writeTogether(deps.db, wroteDraft ? [...writes, dropTurnDraftWrite(input.runId, input.turn)] : writes);
    recorded();
    deps.logger.debug({ runId: input.runId, turn: input.turn, toolCalls: out.toolCalls.length }, 'llm turn done');
    return out;
  }
  await writeRunAnswer(deps, input, writes, reply, addUsage(input.usageBefore, response.usage), agent, recorded);
  return out;
}

/**
 * One LLM turn. Reads the transcript by reference, writes the reply to run_messages, and returns
 * only what the workflow needs to decide: tool call ids and names, a preview, usage.
 */
export async function llmTurn(deps: ActivityDeps, input: LlmTurnInput): Promise<LlmTurnOutput> {
  const { runId, turn } = input;
  // The run's messages up to this turn: the turns before it are the transcript; this turn's reply may be stored already.
  const started = { seq: input.eventSeq, data: { turn } };
  const { transcript: stored, agent, tenantId } = await beginTurn(deps.db, runId, turn, input.agentId, started);
  const recorded = stored.find((m) => m.turn === turn && m.slot === 0)?.message;
  if (recorded?.role === 'assistant') {
    // The reply was stored but the worker died before reporting it: do not ask the LLM again.
    return summarise(recorded, { inputTokens: 0, outputTokens: 0 }, callLimitOf(input));
  }
  if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${input.agentId} does not exist`, 'AgentNotFound');
  return askLlm(deps, input, agent, stored.filter((m) => m.turn < turn).map((m) => m.message), tenantId);
}

export function createLlmTurnActivities(deps: ActivityDeps) {
  return {
    llmTurn: (input: LlmTurnInput) => llmTurn(deps, input),
  };
}
