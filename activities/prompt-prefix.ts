import { ApplicationFailure } from '@temporalio/activity';
import { findAgent } from '../store/agents';
import { findIntegrations } from '../store/integrations/integrations';
import { findThread } from '../store/threads/threads';
import { type Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import type { DiscoveredIntegration } from '../core/discovery';
import type { McpPool } from '../mcp-client/connections/pool';
import type { ChatMessage } from '../core/messages';
import type { ContextPreview, PrefixSource, PromptDecision } from '../core/context-preview';
import type { ModelConfig } from '../core/agent-model';
import { inPromptOrder } from '../core/prompt-order';
import { evaluateCondition, type PromptWhen, type ThreadMetadata } from '../core/prompt-conditions';
import { countMessageTokens } from '../llm/token-count';
import { buildInjectedMessages } from '../mcp-client/conventional-prompts';
import { mcpErrorText } from '../core/mcp-error-text';
import type { ActivityDeps } from './deps';
import { withDeadline } from '../platform/deadline';
import { fetchServerPrompts, type ServerPrompts, type ServerSource } from './server-prompts';

/** Each server gets this long to list and get its prompts; all servers are asked in parallel, inside a 1-minute activity. */
const SERVER_DEADLINE_MS = 20_000;
/** Workflow results are capped at 2 MB by Temporal; a preview that large is a misconfigured server. */
const MAX_PREVIEW_BYTES = 1_500_000;

/** GET /v1/agents/:id/context: the prefix an agent's next run would get, built by a worker. */
/** An integration none of whose prompts went into the prefix, and why. */
const notInjected = (integration: { id: string; name: string }, reason: string): PromptDecision => ({
  integrationId: integration.id, integrationName: integration.name, prompt: null, injected: false, reason,
});

export interface BuiltPrefix {
  messages: ChatMessage[];
  /** what each message was made of, by index */
  sources: PrefixSource[][];
  /** conventional prompts that made it into the prefix */
  injected: number;
  failed: { integrationId: string; message: string }[];
  /** why each conventional prompt was or was not injected */
  decisions: PromptDecision[];
}

/** Why an integration gives the prefix nothing without being asked, or undefined. */
function offReason(i: Integration): string | undefined {
  if (!i.enabled) return 'the integration is disabled';
  if (i.promptInjection === false) return 'the integration\'s promptInjection is false';
  // A pinned integration's server may start only on its own queue's workers: no injection from it.
  if (i.taskQueue) return `pinned to the task queue ${i.taskQueue}, whose workers alone may start its server`;
  return undefined;
}

/**
 * The prefix shared by runs (buildPromptPrefix) and the context preview: every server's
 * conventional prompts, fetched in parallel and assembled in the order of `sources`.
 */
export async function buildConventionalPrefix(
  deps: { mcpPool: McpPool; logger: Logger },
  input: { instructions: string | null; sources: ServerSource[] },
): Promise<BuiltPrefix> {
  const { mcpPool, logger } = deps;
  const failed: BuiltPrefix['failed'] = [];
  const perServer = await Promise.all(input.sources.map(async (source): Promise<ServerPrompts> => {
    const { integration } = source;
    const off = offReason(integration);
    if (off) return { prompts: [], decisions: [notInjected(integration, off)] };
    const log = logger.child({ integrationId: integration.id });
    try {
      return await withDeadline(fetchServerPrompts(mcpPool, source, log), SERVER_DEADLINE_MS);
    } catch (err) {
      const message = mcpErrorText(err);
      log.warn({ err: message }, 'fetching conventional prompts failed; the server is skipped');
      failed.push({ integrationId: integration.id, message });
      return { prompts: [], decisions: [notInjected(integration, `the server failed: ${message}`)] };
    }
  }));
  const prompts = perServer.flatMap((s) => s.prompts);
  const decisions = perServer.flatMap((s) => s.decisions);
  const { messages, sources: messageSources, dropped } = buildInjectedMessages(prompts, input.instructions);
  for (const d of dropped) {
    logger.warn(d, 'conventional prompt dropped');
    const decision = decisions.find((x) => x.integrationId === d.integrationId && x.prompt === d.name && x.injected);
    if (decision) Object.assign(decision, { injected: false, reason: `dropped: ${d.reason}` });
  }
  return { messages, sources: messageSources, injected: prompts.length - dropped.length, failed, decisions };
}

/**
 * The prefix for these integrations (in the agent's order, with its `promptOrder` ones first),
 * listing prompts where discovery has not, each integration's optional prompts subject to the
 * agent's `promptWhen` for its model and the thread's metadata (absent: no thread).
 */
export async function integrationsPrefix(
  deps: ActivityDeps,
  input: {
    instructions: string | null; integrationIds: string[]; promptOrder: string[];
    model: ModelConfig; promptWhen: PromptWhen; threadMetadata?: ThreadMetadata;
    integrations?: Integration[]; discovered?: DiscoveredIntegration[];
  },
): Promise<BuiltPrefix> {
  const found = input.integrations ?? await findIntegrations(deps.db, input.integrationIds);
  const integrations = inPromptOrder(found, (i) => i.id, input.promptOrder);
  const unreachable: PromptDecision[] = [];
  const sources: ServerSource[] = integrations.flatMap((integration) => {
    const d = input.discovered?.find((x) => x.id === integration.id);
    // Discovery already waited for (and logged) an unreachable server: do not wait for it twice.
    if (d?.status === 'unreachable') {
      unreachable.push(notInjected(integration, 'unreachable at discovery'));
      return [];
    }
    const when = input.promptWhen[integration.id];
    const condition = when && { ...evaluateCondition(when, input.model, input.threadMetadata), given: true };
    return [{ integration, prompts: d?.prompts, ...(condition ? { condition } : {}) }];
  });
  const built = await buildConventionalPrefix(deps, { instructions: input.instructions, sources });
  const rank = (d: PromptDecision) => integrations.findIndex((i) => i.id === d.integrationId);
  return { ...built, decisions: [...unreachable, ...built.decisions].sort((a, b) => rank(a) - rank(b)) };
}

export function createPromptPrefixActivities(deps: ActivityDeps) {
  return {
    /** The prefix an agent's next run would get, for GET /v1/agents/:id/context; nothing is stored. */
    async previewPromptPrefix({ agentId, threadId }: { agentId: string; threadId?: string }): Promise<ContextPreview> {
      const agent = await findAgent(deps.db, agentId);
      if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${agentId} does not exist`, 'AgentNotFound');
      const thread = threadId === undefined ? undefined : await findThread(deps.db, threadId);
      if (threadId !== undefined && !thread) throw ApplicationFailure.nonRetryable(`Thread ${threadId} does not exist`, 'ThreadNotFound');
      const { messages, sources, injected, failed, decisions } = await integrationsPrefix(deps, {
        instructions: agent.instructions, integrationIds: agent.integrationIds, promptOrder: agent.promptOrder,
        model: agent.model, promptWhen: agent.promptWhen, threadMetadata: thread?.metadata,
      });
      const bytes = Buffer.byteLength(JSON.stringify(messages));
      if (bytes > MAX_PREVIEW_BYTES) {
        throw ApplicationFailure.nonRetryable(`The injected prefix is ${bytes} bytes, more than a preview can carry`, 'PrefixTooLarge');
      }
      const tokens = countMessageTokens(messages, agent.model);
      deps.logger.info({ agentId, injected, failed: failed.length, bytes, tokens: tokens.total }, 'context preview built');
      return {
        messages: messages.map((m, i) => ({ ...m, sources: sources[i], tokens: tokens.perMessage[i] })),
        decisions,
        totalTokens: tokens.total, tokensEstimated: tokens.estimated, tokenizer: tokens.tokenizer,
      };
    },
  };
}
