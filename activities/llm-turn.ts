import { ApplicationFailure, Context } from '@temporalio/activity';
import { beginTurn, writeAnswer } from '../store/runs/lifecycle';
import { eventWrite } from '../store/runs/events';
import { runVersionWrite, turnCompletedWrite } from '../store/runs/turns';
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
import { isPlainObject } from '../core/plain-object';
import { DEFAULT_MAX_TOOL_CALLS_PER_TURN } from '../core/run-limits';
import type { Logger } from '../platform/logger';
import { emitRunSpan, startTurnGeneration, type TurnGeneration } from '../platform/tracing/run-trace';
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

/** The model's reply, heartbeating while it writes; its words go to event streams as they come. */
async function completeTurn(
  deps: ActivityDeps, provider: LlmProvider, input: LlmTurnInput, agent: Agent, messages: ChatMessage[], tools: ToolDefinition[],
): Promise<{ response: LlmResponse; wroteDraft: boolean }> {
  const { runId, turn } = input;
  const ctx = Context.current();
  const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  const generation = startTurnGeneration({ runId, threadId: input.threadId, agentId: input.agentId, turn }, agent.model, messages, tools);
  const text = new TurnText(deps.db, deps.logger, { runId, turn, attempt: ctx.info.attempt });
  let response;
  try {
    response = await provider.complete({
      model: agent.model, messages, tools, turn, step: input.step ?? turn - 1, signal: ctx.cancellationSignal,
      ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}), onText: text.onText, onToolInput: text.onToolInput,
    });
    await text.published();
  } catch (err) {
    await text.published();
    throw turnFailure(err, ctx, generation, deps.logger, { runId, turn });
  } finally {
    clearInterval(heartbeat);
  }
  generation.end(response);
  return { response, wroteDraft: text.wroteDraft() };
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
  offered: () => Map<string, OfferedTool>,
): Write[] {
  const { runId, turn, eventSeq } = input;
  const calls = reply.toolCalls ?? [];
  return [
    runMessageWrite(runId, turn, 0, reply),
    // The turn's start again, in case its unflushed commit was lost (PROGRESS_ONLY).
    eventWrite(runId, eventSeq, 'turn_started', { turn }),
    turnCompletedWrite(runId, turn, usage, calls.length),
    eventWrite(runId, eventSeq + 1, 'turn_ended', {
      turn, textPreview: truncateUtf8(reply.content, 280), toolCalls: out.toolCalls.map((c) => c.name), usage,
      ...(out.refusedToolCalls ? { refusedToolCalls: out.refusedToolCalls } : {}),
    }),
    ...refusedCallsWrites({ runId, turn, eventSeq }, calls, callLimitOf(input), offered),
    ...(deps.version ? [runVersionWrite(runId, deps.version)] : []),
  ];
}

/** A reply without tool calls is the run's answer: the run ends in the turn's own write. */
async function writeRunAnswer(
  deps: ActivityDeps, input: LlmTurnInput, writes: Write[], reply: AssistantMessage, usage: Usage,
): Promise<void> {
  const { runId, turn } = input;
  const usageWithChildren = addUsage(usage, input.childUsage);
  const ended = await writeAnswer(deps.db, writes, { runId, turn, reply, usage, usageWithChildren, seq: input.eventSeq + 2 });
  // Once, with the first result: a retried turn found the reply stored and wrote nothing.
  if (ended) {
    emitRunSpan({
      runId, threadId: ended.threadId, agentId: ended.agentId, status: 'completed', stopReason: 'answer', error: null,
      turns: turn, usage, output: reply.content, startTime: new Date(ended.createdAt),
    });
  }
  deps.logger.info({ runId, status: 'completed', stopReason: 'answer', turns: turn }, 'run finished');
}

/**
 * A turn once its transcript is known: asks the LLM with the run's prefix, the thread's history and
 * the transcript, writes the reply to run_messages with the turn's end, and returns what the
 * workflow needs to decide. `transcript` is the run's messages before this turn.
 */
export async function askLlm(deps: ActivityDeps, input: LlmTurnInput, agent: Agent, transcript: ChatMessage[]): Promise<LlmTurnOutput> {
  const provider = providerFor(deps, agent);
  const messages = await turnMessages(deps, input, agent, transcript);
  const { definitions: tools, offered } = await turnTools(deps, input);
  const { response, wroteDraft } = await completeTurn(deps, provider, input, agent, messages, tools);
  const reply: AssistantMessage = {
    role: 'assistant',
    content: response.text,
    ...(response.toolCalls.length > 0 ? { toolCalls: response.toolCalls } : {}),
  };
  const out = summarise(reply, response.usage, callLimitOf(input));
  const writes = replyWrites(deps, input, reply, response.usage, out, offered);
  if (response.toolCalls.length > 0 || !input.usageBefore) {
    // The turn's draft goes with its end (a run's end deletes all of its drafts).
    await writeTogether(deps.db, wroteDraft ? [...writes, dropTurnDraftWrite(input.runId, input.turn)] : writes);
    deps.logger.debug({ runId: input.runId, turn: input.turn, toolCalls: out.toolCalls.length }, 'llm turn done');
    return out;
  }
  await writeRunAnswer(deps, input, writes, reply, addUsage(input.usageBefore, response.usage));
  return out;
}

/**
 * One LLM turn. Reads the transcript by reference, writes the reply to run_messages, and returns
 * only what the workflow needs to decide: tool call ids and names, a preview, usage.
 */
export async function llmTurn(deps: ActivityDeps, input: LlmTurnInput): Promise<LlmTurnOutput> {
  const { runId, turn } = input;
  // The run's messages up to this turn: the turns before it are the transcript; this turn's reply may be stored already.
  const { transcript: stored, agent } = await beginTurn(deps.db, runId, turn, input.agentId, { seq: input.eventSeq, data: { turn } });
  const recorded = stored.find((m) => m.turn === turn && m.slot === 0)?.message;
  if (recorded?.role === 'assistant') {
    // The reply was stored but the worker died before reporting it: do not ask the LLM again.
    return summarise(recorded, { inputTokens: 0, outputTokens: 0 }, callLimitOf(input));
  }
  if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${input.agentId} does not exist`, 'AgentNotFound');
  return askLlm(deps, input, agent, stored.filter((m) => m.turn < turn).map((m) => m.message));
}

export function createLlmTurnActivities(deps: ActivityDeps) {
  return {
    llmTurn: (input: LlmTurnInput) => llmTurn(deps, input),
  };
}
