import { SUB_AGENT_INPUT_SCHEMA, type SubAgentRoute } from '../core/sub-agents';
import { subAgentsByIds } from '../store/sub-agents';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { beginTurn, writeAnswer } from '../store/runs/lifecycle';
import { eventWrite } from '../store/runs/events';
import { runVersionWrite, turnCompletedWrite } from '../store/runs/turns';
import { runMessageWrite } from '../store/runs/transcript';
import { dropTurnDraftWrite } from '../store/runs/turn-drafts';
import { textPublisher, type TextPublisher } from './text-stream';
import { writeTogether } from '../store/runs/writes';
import { classifyLlmError, type LlmFailure } from '../llm/errors';
import { RESULT_PREVIEW_BYTES } from '../core/tool-texts';
import { oneLine, truncateUtf8, utf8Length } from '../core/truncated-text';
import type { Agent } from '../core/agent';
import { addUsage, type ChatMessage, type ToolDefinition, type Usage } from '../core/messages';
import { emitRunSpan, startTurnGeneration } from '../platform/tracing/run-trace';
import { truncatedText } from '../core/truncated-text';
import type { ActivityDeps } from './deps';
import { readSnapshot, runIntegrations, threadHistory, type PrefixSnapshot } from './run-snapshots';
import { nativeToolKind } from '../core/native-tool-kinds';
import { toolInputSchema } from './tools/native-tool';
import { nativeTools } from './tools';
import { mcpToolDefinitions } from './tools/mcp-tool';
import { isPlainObject } from '../core/plain-object';
import { DEFAULT_MAX_TOOL_CALLS_PER_TURN } from '../core/run-limits';
import { offeredTools, refusedCallsWrites, type OfferedTool } from './refused-calls';

export interface LlmTurnInput {
  runId: string;
  threadId: string;
  agentId: string;
  turn: number;
  /** the run's step cursor (scripted models play the step at it); absent: the turn's own, turn - 1 */
  step?: number;
  /** the native tools this turn offers, by name */
  nativeTools: string[];
  /** false when the thread has no data sources yet, so describing source_query needs no read (absent: unknown) */
  hasDataSources?: boolean;
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
  /** the run's sub-agents, offered as tools (core/sub-agents.ts) */
  subAgents?: Record<string, SubAgentRoute>;
  /** the run's limits.maxToolCallsPerTurn; absent: the default (core/run-limits.ts) */
  maxToolCallsPerTurn?: number;
}

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

function summarise(message: ChatMessage & { role: 'assistant' }, usage: LlmTurnOutput['usage'], callLimit: number): LlmTurnOutput {
  const calls = message.toolCalls ?? [];
  return {
    ...(calls.length > callLimit ? { refusedToolCalls: calls.length - callLimit } : {}),
    toolCalls: calls.slice(0, callLimit).map((c) => {
      const native = nativeToolKind(c.name);
      return native ? { id: c.id, name: c.name, summary: oneLine(native.summary(isPlainObject(c.arguments) ? c.arguments : {}), SUMMARY_CHARS) } : { id: c.id, name: c.name };
    }),
    textPreview: truncateUtf8(message.content, RESULT_PREVIEW_BYTES),
    textBytes: utf8Length(message.content),
    usage,
  };
}

/**
 * What the LLM is told of its tools this turn: the run's MCP tools and the native tools offered;
 * and, for the calls a turn does not run, each one's kind.
 */
async function turnTools(deps: ActivityDeps, input: LlmTurnInput): Promise<{ definitions: ToolDefinition[]; offered: () => Map<string, OfferedTool> }> {
  const integrations = await runIntegrations(deps.db, input.runId);
  const offered = nativeTools.filter((t) => input.nativeTools.includes(t.tool.name));
  const context = { deps, threadId: input.threadId, integrations, hasDataSources: input.hasDataSources !== false };
  const natives = await Promise.all(offered.map(async (t): Promise<ToolDefinition> => ({
    name: t.tool.name, description: await t.describe(context), inputSchema: toolInputSchema(t.tool),
  })));
  const subAgents = await subAgentDefinitions(deps, input.subAgents);
  return {
    definitions: [...mcpToolDefinitions(integrations), ...natives, ...subAgents],
    offered: () => offeredTools(integrations, offered.map((t) => t.tool), subAgents.map((d) => d.name)),
  };
}

/** Each sub-agent as a tool: its description (or what it is), and `{input}`. */
async function subAgentDefinitions(deps: ActivityDeps, routes: LlmTurnInput['subAgents']): Promise<ToolDefinition[]> {
  const entries = Object.entries(routes ?? {});
  if (entries.length === 0) return [];
  const agents = await subAgentsByIds(deps.db, entries.map(([, r]) => r.agentId));
  return entries.map(([name, route]) => ({
    name, inputSchema: SUB_AGENT_INPUT_SCHEMA as unknown as Record<string, unknown>,
    description: agents.find((a) => a.id === route.agentId)?.description ?? `Asks the agent ${route.agentName}; its answer is the result.`,
  }));
}

/**
 * A turn once its transcript is known: asks the LLM with the run's prefix, the thread's history and
 * the transcript, writes the reply to run_messages with the turn's end, and returns what the
 * workflow needs to decide. `transcript` is the run's messages before this turn.
 */
export async function askLlm(deps: ActivityDeps, input: LlmTurnInput, agent: Agent, transcript: ChatMessage[]): Promise<LlmTurnOutput> {
  const { db, providers, logger } = deps;
  const { runId, turn } = input;
  const provider = providers[agent.model.provider];
  if (!provider) {
    throw ApplicationFailure.nonRetryable(`No LLM provider "${agent.model.provider}" is configured on this worker`, 'ProviderUnavailable');
  }
  const prefix = await readSnapshot<PrefixSnapshot>(db, runId, 'prefix');
  const history = await threadHistory(db, runId, input.threadId);
  const messages = [...(prefix?.messages ?? []), ...history, ...transcript].map((m) => (
    // What the LLM sees of a tool result is capped per agent; the transcript keeps it whole.
    m.role === 'tool' ? { ...m, content: truncatedText(m.content, agent.maxToolResultBytes) } : m));
  const { definitions: tools, offered } = await turnTools(deps, input);

  const ctx = Context.current();
  const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  const generation = startTurnGeneration({ runId, threadId: input.threadId, agentId: input.agentId, turn }, agent.model, messages, tools);
  // The words as the model writes them reach event streams through PostgreSQL, never history.
  const at = { runId, turn, attempt: ctx.info.attempt };
  const words = textPublisher(db, logger, at);
  const inputs = new Map<string, TextPublisher>();
  const onToolInput = (toolCallId: string, text: string) => {
    let publisher = inputs.get(toolCallId);
    if (!publisher) inputs.set(toolCallId, (publisher = textPublisher(db, logger, { ...at, toolCallId })));
    publisher.push(text);
  };
  const published = () => Promise.all([words, ...inputs.values()].map((p) => p.close()));
  let response;
  try {
    response = await provider.complete({
      model: agent.model, messages, tools, turn, step: input.step ?? turn - 1, signal: ctx.cancellationSignal, ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}), onText: (text) => words.push(text), onToolInput,
    });
    await published();
  } catch (err) {
    await published();
    if (ctx.cancellationSignal.aborted) {
      generation.fail(err, 'Cancelled');
      throw err;
    }
    const failure = classifyLlmError(err);
    generation.fail(err, failure.type);
    logger.warn({ runId, turn, type: failure.type, retryable: failure.retryable, retryAfterMs: failure.retryAfterMs }, failure.message);
    throw toTemporalFailure(failure);
  } finally {
    clearInterval(heartbeat);
  }
  generation.end(response);

  const reply: ChatMessage & { role: 'assistant' } = {
    role: 'assistant',
    content: response.text,
    ...(response.toolCalls.length > 0 ? { toolCalls: response.toolCalls } : {}),
  };
  const callLimit = callLimitOf(input);
  const out = summarise(reply, response.usage, callLimit);
  const writes = [
    runMessageWrite(runId, turn, 0, reply),
    // The turn's start again, in case its unflushed commit was lost (PROGRESS_ONLY).
    eventWrite(runId, input.eventSeq, 'turn_started', { turn }),
    turnCompletedWrite(runId, turn, response.usage, response.toolCalls.length),
    eventWrite(runId, input.eventSeq + 1, 'turn_ended', {
      turn, textPreview: truncateUtf8(response.text, 280), toolCalls: out.toolCalls.map((c) => c.name), usage: response.usage,
      ...(out.refusedToolCalls ? { refusedToolCalls: out.refusedToolCalls } : {}),
    }),
    ...refusedCallsWrites({ runId, turn, eventSeq: input.eventSeq }, response.toolCalls, callLimit, offered),
    ...(deps.version ? [runVersionWrite(runId, deps.version)] : []),
  ];
  if (response.toolCalls.length > 0 || !input.usageBefore) {
    // The turn's draft goes with its end (a run's end deletes all of its drafts).
    await writeTogether(db, words.wrote() ? [...writes, dropTurnDraftWrite(runId, turn)] : writes);
    logger.debug({ runId, turn, toolCalls: out.toolCalls.length }, 'llm turn done');
    return out;
  }
  const usage = addUsage(input.usageBefore, response.usage);
  const usageWithChildren = addUsage(usage, input.childUsage);
  const ended = await writeAnswer(db, writes, { runId, turn, reply, usage, usageWithChildren, seq: input.eventSeq + 2 });
  // Once, with the first result: a retried turn found the reply stored and wrote nothing.
  if (ended) {
    emitRunSpan({
      runId, threadId: ended.threadId, agentId: ended.agentId, status: 'completed', stopReason: 'answer', error: null,
      turns: turn, usage, output: reply.content, startTime: new Date(ended.createdAt),
    });
  }
  logger.info({ runId, status: 'completed', stopReason: 'answer', turns: turn }, 'run finished');
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
