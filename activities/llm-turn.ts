import { ApplicationFailure, Context } from '@temporalio/activity';
import { findAgent } from '../core/db/agents';
import {
  appendEvent, completeTurn, getRunMessage, getSnapshot, recordTurnAttempt, runTranscript, putRunMessage,
} from '../core/db/run-store';
import { threadMessages } from '../core/db/threads';
import { classifyLlmError, type LlmFailure } from '../core/llm/errors';
import type { ChatMessage, ToolDefinition } from '../core/messages';
import { startTurnGeneration } from '../core/tracing/run-trace';
import type { LlmTurnInput, LlmTurnOutput } from '../workflows/definitions';
import { RESULT_PREVIEW_BYTES, truncateUtf8, utf8Length } from '../workflows/tool-results';
import type { ActivityDeps } from './deps';
import { SNAPSHOT, type PrefixSnapshot } from './run-context';
import type { DiscoverySnapshot } from './discovery';
import { mcpToolDefinitions, nativeToolDefinitions } from './tool-definitions';
import { describeSourceQuery } from './source-query';
import { NATIVE_TOOL_NAMES } from '../workflows/tool-routing';

const HEARTBEAT_EVERY_MS = 5_000;

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

function summarise(message: ChatMessage & { role: 'assistant' }, usage: LlmTurnOutput['usage']): LlmTurnOutput {
  return {
    toolCalls: (message.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name })),
    textPreview: truncateUtf8(message.content, RESULT_PREVIEW_BYTES),
    textBytes: utf8Length(message.content),
    usage,
  };
}

export function createLlmTurnActivities({ db, providers, logger, sourceQuery }: ActivityDeps) {
  return {
    /**
     * One LLM turn. Reads the transcript by reference, writes the reply to run_messages, and
     * returns only what the workflow needs to decide: tool call ids and names, a preview, usage.
     */
    async llmTurn(input: LlmTurnInput): Promise<LlmTurnOutput> {
      const { runId, turn } = input;
      const recorded = await getRunMessage(db, runId, turn, 0);
      if (recorded?.role === 'assistant') {
        // The reply was stored but the worker died before reporting it: do not ask the LLM again.
        return summarise(recorded, { inputTokens: 0, outputTokens: 0 });
      }
      await appendEvent(db, runId, input.eventSeq, 'turn_started', { turn });

      const agent = await findAgent(db, input.agentId);
      if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${input.agentId} does not exist`, 'AgentNotFound');
      const provider = providers[agent.model.provider];
      if (!provider) {
        throw ApplicationFailure.nonRetryable(`No LLM provider "${agent.model.provider}" is configured on this worker`, 'ProviderUnavailable');
      }
      const prefix = await getSnapshot<PrefixSnapshot>(db, runId, SNAPSHOT.prefix);
      const history = await threadMessages(db, input.threadId);
      const transcript = await runTranscript(db, runId, turn - 1);
      const messages = [...(prefix?.messages ?? []), ...history, ...transcript.map((m) => m.message)];
      const discovery = await getSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery);
      const integrations = discovery?.integrations ?? [];
      const sources = input.nativeTools.includes(NATIVE_TOOL_NAMES.sourceQuery) ? await describeSourceQuery(db, input.threadId, sourceQuery) : '';
      const tools: ToolDefinition[] = [...mcpToolDefinitions(integrations), ...nativeToolDefinitions(input.nativeTools, integrations, sources)];

      await recordTurnAttempt(db, runId, turn);
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      const generation = startTurnGeneration({ runId, threadId: input.threadId, agentId: input.agentId, turn }, agent.model, messages, tools);
      let response;
      try {
        response = await provider.complete({ model: agent.model, messages, tools, turn, signal: ctx.cancellationSignal });
      } catch (err) {
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
      await putRunMessage(db, runId, turn, 0, reply);
      await completeTurn(db, runId, turn, response.usage, response.toolCalls.length);
      const out = summarise(reply, response.usage);
      await appendEvent(db, runId, input.eventSeq + 1, 'turn_ended', {
        turn, textPreview: truncateUtf8(response.text, 280), toolCalls: out.toolCalls.map((c) => c.name), usage: response.usage,
      });
      logger.debug({ runId, turn, toolCalls: out.toolCalls.length }, 'llm turn done');
      return out;
    },
  };
}
