import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@modelcontextprotocol/client';
import { findAgent } from '../store/agents';
import { findIntegrations } from '../store/integrations/integrations';
import { type Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import type { DiscoveredIntegration } from '../core/discovery';
import type { McpPool } from '../mcp-client/pool';
import { promptBody } from '../mcp-client/prompt-text';
import type { ChatMessage } from '../core/messages';
import type { ContextPreview, PrefixSource } from '../core/context-preview';
import { inPromptOrder } from '../core/prompt-order';
import { countMessageTokens } from '../llm/token-count';
import { buildInjectedMessages, detectConventionalPrompt, type FetchedPrompt } from '../mcp-client/conventional-prompts';
import { mcpErrorText } from '../core/mcp-error-text';
import type { ActivityDeps } from './deps';
import { withDeadline } from '../platform/deadline';

type ListedPrompt = DiscoveredIntegration['prompts'][number];

/** Each server gets this long to list and get its prompts; all servers are asked in parallel, inside a 1-minute activity. */
const SERVER_DEADLINE_MS = 20_000;
const GET_TIMEOUT_MS = 10_000;
const MAX_PAGES = 20;
/** Workflow results are capped at 2 MB by Temporal; a preview that large is a misconfigured server. */
const MAX_PREVIEW_BYTES = 1_500_000;

export interface ServerSource {
  integration: Integration;
  /** the prompts discovery already listed; undefined: list them now */
  prompts?: ListedPrompt[];
}

/** GET /v1/agents/:id/context: the prefix an agent's next run would get, built by a worker. */
export interface BuiltPrefix {
  messages: ChatMessage[];
  /** what each message was made of, by index */
  sources: PrefixSource[][];
  /** conventional prompts that made it into the prefix */
  injected: number;
  failed: { integrationId: string; message: string }[];
}

const lower = (s: string) => s.trim().toLowerCase();

/** Configured arguments for a prompt: exact name first, then the name matched case-insensitively. */
function configuredArguments(integration: Integration, name: string): Record<string, string> {
  const all = integration.promptArguments ?? {};
  const key = name in all ? name : Object.keys(all).find((k) => lower(k) === lower(name));
  return key ? all[key] : {};
}

async function listAllPrompts(client: Client): Promise<ListedPrompt[]> {
  const items: ListedPrompt[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await client.listPrompts({ cursor }, { timeout: GET_TIMEOUT_MS });
    items.push(...res.prompts);
    if (!res.nextCursor) break;
    cursor = res.nextCursor;
  }
  return items;
}

/** One server's conventional prompts. Any failure skips the whole server (contract), so its instructions never arrive half-made. */
async function fetchServerPrompts(pool: McpPool, source: ServerSource, log: Logger): Promise<FetchedPrompt[]> {
  const { integration } = source;
  const disabled = new Set((integration.disabledPrompts ?? []).map(lower));
  return pool.withClient(integration, async (client) => {
    if (!client.getServerCapabilities()?.prompts) return [];
    const listed = source.prompts ?? (await listAllPrompts(client));
    const wanted = listed.filter((p) => detectConventionalPrompt(p.name) && !disabled.has(lower(p.name)));
    const fetched = await Promise.all(wanted.map(async (p): Promise<FetchedPrompt | undefined> => {
      const args = configuredArguments(integration, p.name);
      const missing = (p.arguments ?? []).filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
      if (missing.length > 0) {
        // Not a server failure: the prompt needs settings nobody gave it (integration promptArguments).
        log.warn({ prompt: p.name, missing }, 'conventional prompt skipped: required arguments are not configured');
        return undefined;
      }
      const result = await client.getPrompt({ name: p.name, arguments: args }, { timeout: GET_TIMEOUT_MS });
      const content = promptBody(result);
      if (!content.trim() && detectConventionalPrompt(p.name)?.kind !== 'tool_result') {
        log.warn({ prompt: p.name }, 'conventional prompt skipped: its content is empty');
        return undefined;
      }
      return { integrationId: integration.id, serverName: integration.name, name: p.name, content };
    }));
    return fetched.filter((p): p is FetchedPrompt => p !== undefined);
  });
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
  // A pinned integration's server may start only on its own queue's workers: no injection from it.
  const sources = input.sources.filter((s) => s.integration.enabled && s.integration.promptInjection !== false && !s.integration.taskQueue);
  const perServer = await Promise.all(sources.map(async (source) => {
    const log = logger.child({ integrationId: source.integration.id });
    try {
      return await withDeadline(fetchServerPrompts(mcpPool, source, log), SERVER_DEADLINE_MS);
    } catch (err) {
      const message = mcpErrorText(err);
      log.warn({ err: message }, 'fetching conventional prompts failed; the server is skipped');
      failed.push({ integrationId: source.integration.id, message });
      return [];
    }
  }));
  const prompts = perServer.flat();
  const { messages, sources: messageSources, dropped } = buildInjectedMessages(prompts, input.instructions);
  for (const d of dropped) logger.warn(d, 'conventional prompt dropped');
  return { messages, sources: messageSources, injected: prompts.length - dropped.length, failed };
}

/**
 * The prefix for these integrations (in the agent's order, with its `promptOrder` ones first),
 * listing prompts where discovery has not.
 */
export async function integrationsPrefix(
  deps: ActivityDeps,
  input: {
    instructions: string | null; integrationIds: string[]; promptOrder: string[];
    integrations?: Integration[]; discovered?: DiscoveredIntegration[];
  },
): Promise<BuiltPrefix> {
  const found = input.integrations ?? await findIntegrations(deps.db, input.integrationIds);
  const integrations = inPromptOrder(found, (i) => i.id, input.promptOrder);
  const sources: ServerSource[] = integrations.flatMap((integration) => {
    const d = input.discovered?.find((x) => x.id === integration.id);
    // Discovery already waited for (and logged) an unreachable server: do not wait for it twice.
    if (d?.status === 'unreachable') return [];
    return [{ integration, prompts: d?.prompts }];
  });
  return buildConventionalPrefix(deps, { instructions: input.instructions, sources });
}

export function createPromptPrefixActivities(deps: ActivityDeps) {
  return {
    /** The prefix an agent's next run would get, for GET /v1/agents/:id/context; nothing is stored. */
    async previewPromptPrefix({ agentId }: { agentId: string }): Promise<ContextPreview> {
      const agent = await findAgent(deps.db, agentId);
      if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${agentId} does not exist`, 'AgentNotFound');
      const { messages, sources, injected, failed } = await integrationsPrefix(deps, {
        instructions: agent.instructions, integrationIds: agent.integrationIds, promptOrder: agent.promptOrder,
      });
      const bytes = Buffer.byteLength(JSON.stringify(messages));
      if (bytes > MAX_PREVIEW_BYTES) {
        throw ApplicationFailure.nonRetryable(`The injected prefix is ${bytes} bytes, more than a preview can carry`, 'PrefixTooLarge');
      }
      const tokens = countMessageTokens(messages, agent.model);
      deps.logger.info({ agentId, injected, failed: failed.length, bytes, tokens: tokens.total }, 'context preview built');
      return {
        messages: messages.map((m, i) => ({ ...m, sources: sources[i], tokens: tokens.perMessage[i] })),
        totalTokens: tokens.total, tokensEstimated: tokens.estimated, tokenizer: tokens.tokenizer,
      };
    },
  };
}
