import { startObservation, type LangfuseObservation } from '@langfuse/tracing';
import type { ModelConfig } from '../../core/agent-model';
import type { ChatMessage, ToolDefinition, Usage } from '../../core/messages';
import { rootSpanIdForRun, runParentContext, traceIdForRun, withPinnedIds } from './ids';
import { tracingInstalled } from './setup';
import { shortened } from '../../core/truncated-text';

/**
 * Observations of one run, emitted from activities. Without a configured provider (no LANGFUSE_*)
 * none is built. Names follow the seeds: `llm_turn`, `mcp_tool__<name>`,
 * `mcp_resource_retrieval`, `mcp_prompt_retrieval`, under the root span `run`.
 */
export const RUN_SPAN = 'run';
export const LLM_TURN_GENERATION = 'llm_turn';
export const mcpToolSpanName = (toolName: string) => `mcp_tool__${toolName}`;

/** Observation payloads go over OTLP; a 256 MiB resource must not. */
const MAX_PAYLOAD_CHARS = 32_000;
const cap = (text: string) => (text.length > MAX_PAYLOAD_CHARS ? `${shortened(text, MAX_PAYLOAD_CHARS + 1)} [${text.length} chars]` : text);

/** Trace-level attributes on every observation: the run's trace, with the thread as its Langfuse session. */
function tagTrace(observation: LangfuseObservation, threadId: string): void {
  observation.otelSpan.setAttributes({ 'session.id': threadId, 'langfuse.trace.name': RUN_SPAN });
}

interface RunRef {
  runId: string;
  threadId: string;
}

interface Verdict {
  status: 'ok' | 'error';
  content: string;
}

/** One span around a tool call's work, carrying integration id, status and error metadata. */
export async function traceToolCall<V extends Verdict>(
  ref: RunRef, name: string, input: unknown, metadata: Record<string, unknown>, work: () => Promise<V>,
): Promise<V> {
  if (!tracingInstalled()) return work();
  const span = startObservation(name, { input, metadata }, { asType: 'tool', parentSpanContext: runParentContext(ref.runId) });
  tagTrace(span, ref.threadId);
  try {
    const verdict = await work();
    const isError = verdict.status === 'error';
    span.update({
      output: cap(verdict.content),
      metadata: { ...metadata, status: verdict.status, isError, ...(isError ? { error: cap(verdict.content) } : {}) },
      ...(isError ? { level: 'ERROR' as const, statusMessage: cap(verdict.content) } : {}),
    });
    return verdict;
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    span.update({
      level: 'ERROR', statusMessage: message, metadata: { ...metadata, status: 'interrupted', isError: true, error: message },
    });
    throw err;
  } finally {
    span.end();
  }
}

export interface TurnGeneration {
  end(response: { text: string; toolCalls: unknown[]; usage: Usage }): void;
  fail(err: unknown, failureType?: string): void;
}

/** One generation per LLM turn, with model, input, output and usage. */
export function startTurnGeneration(
  ref: RunRef & { agentId: string; turn: number }, model: ModelConfig, messages: ChatMessage[], tools: ToolDefinition[],
): TurnGeneration {
  if (!tracingInstalled()) return { end: () => {}, fail: () => {} };
  const remote = model.provider === 'scripted' ? undefined : model;
  const modelParameters: Record<string, string | number> = { provider: model.provider };
  if (remote?.temperature !== undefined) modelParameters.temperature = remote.temperature;
  if (remote?.maxTokens !== undefined) modelParameters.maxTokens = remote.maxTokens;
  const generation = startObservation(LLM_TURN_GENERATION, {
    model: remote?.name ?? model.provider,
    modelParameters,
    input: messages.map((m) => ({ ...m, content: cap(m.content) })),
    metadata: { runId: ref.runId, agentId: ref.agentId, turn: ref.turn, tools: tools.map((t) => t.name) },
  }, { asType: 'generation', parentSpanContext: runParentContext(ref.runId) });
  tagTrace(generation, ref.threadId);
  return {
    end(response) {
      const { inputTokens, outputTokens } = response.usage;
      generation.update({
        output: { text: cap(response.text), toolCalls: response.toolCalls },
        usageDetails: { input: inputTokens, output: outputTokens, total: inputTokens + outputTokens },
      });
      generation.end();
    },
    fail(err, failureType) {
      const message = (err as Error)?.message ?? String(err);
      generation.update({ level: 'ERROR', statusMessage: message, metadata: { isError: true, error: message, errorType: failureType } });
      generation.end();
    },
  };
}

export interface RunSummary extends RunRef {
  agentId: string;
  status: string;
  stopReason: string;
  error: { type: string; message: string } | null;
  turns: number;
  usage: Usage;
  output: string | null;
  startTime: Date;
}

/** The run's root span, with the derived span id its children already point at. Emitted once, when the run ends. */
export function emitRunSpan(run: RunSummary): void {
  if (!tracingInstalled()) return;
  const span = withPinnedIds({ traceId: traceIdForRun(run.runId), spanId: rootSpanIdForRun(run.runId) }, () => startObservation(RUN_SPAN, {
    output: run.output === null ? undefined : cap(run.output),
    metadata: {
      runId: run.runId, agentId: run.agentId, status: run.status, stopReason: run.stopReason, turns: run.turns,
      usage: run.usage, ...(run.error ? { isError: true, error: run.error } : {}),
    },
    ...(run.error ? { level: 'ERROR' as const, statusMessage: `${run.error.type}: ${run.error.message}` } : {}),
  }, { asType: 'agent', startTime: run.startTime }));
  tagTrace(span, run.threadId);
  span.end();
}
