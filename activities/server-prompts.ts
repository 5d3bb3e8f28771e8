import type { Client } from '@modelcontextprotocol/client';
import { type Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import type { DiscoveredIntegration } from '../core/discovery';
import type { McpPool } from '../mcp-client/connections/pool';
import { promptBody } from '../mcp-client/prompt-text';
import { cachedPromptContent } from '../mcp-client/prompt-cache';
import type { PromptDecision } from '../core/context-preview';
import type { ConditionOutcome } from '../core/prompt-conditions';
import { detectConventionalPrompt, isOptionalPrompt, type FetchedPrompt } from '../mcp-client/conventional-prompts';

/**
 * One server's conventional prompts for the prefix: which are wanted (disabledPrompts, the
 * agent's promptWhen condition, configured arguments), fetched, and why each was or was not.
 */

type ListedPrompt = DiscoveredIntegration['prompts'][number];

const GET_TIMEOUT_MS = 10_000;
const MAX_PAGES = 20;

export interface ServerSource {
  integration: Integration;
  /** the prompts discovery already listed; undefined: list them now */
  prompts?: ListedPrompt[];
  /** the agent's promptWhen condition on this integration, evaluated; absent: none */
  condition?: ConditionOutcome & { given: boolean };
}

export interface ServerPrompts {
  prompts: FetchedPrompt[];
  decisions: PromptDecision[];
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

/** Why a listed conventional prompt is left out before it is fetched, or undefined to fetch it. */
function skipReason(source: ServerSource, p: ListedPrompt, disabled: Set<string>, args: Record<string, string>): string | undefined {
  if (disabled.has(lower(p.name))) return 'listed in the integration\'s disabledPrompts';
  const { condition } = source;
  if (condition && !condition.met && isOptionalPrompt(p.name)) return `promptWhen not met: ${condition.reason}`;
  const missing = (p.arguments ?? []).filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
  // Not a server failure: the prompt needs settings nobody gave it (integration promptArguments).
  if (missing.length > 0) return `required arguments not configured (promptArguments): ${missing.join(', ')}`;
  return undefined;
}

function injectedReason(source: ServerSource, name: string): string {
  const { condition } = source;
  if (!isOptionalPrompt(name)) {
    return condition?.given ? 'system_prompt is always injected, whatever promptWhen says' : 'system_prompt is always injected';
  }
  return condition?.given ? `promptWhen met: ${condition.reason}` : 'no promptWhen condition';
}

/** One server's conventional prompts. Any failure skips the whole server (contract), so its instructions never arrive half-made. */
export async function fetchServerPrompts(pool: McpPool, source: ServerSource, log: Logger): Promise<ServerPrompts> {
  const { integration } = source;
  const disabled = new Set((integration.disabledPrompts ?? []).map(lower));
  const decide = (prompt: string | null, injected: boolean, reason: string): PromptDecision => (
    { integrationId: integration.id, integrationName: integration.name, prompt, injected, reason }
  );
  return pool.withClient(integration, async (client) => {
    if (!client.getServerCapabilities()?.prompts) return { prompts: [], decisions: [decide(null, false, 'the server offers no prompts')] };
    const listed = (source.prompts ?? (await listAllPrompts(client))).filter((p) => detectConventionalPrompt(p.name));
    const outcomes = await Promise.all(listed.map(async (p): Promise<{ prompt?: FetchedPrompt; decision: PromptDecision }> => {
      const args = configuredArguments(integration, p.name);
      const skipped = skipReason(source, p, disabled, args);
      if (skipped) {
        if (skipped.startsWith('required')) log.warn({ prompt: p.name }, `conventional prompt skipped: ${skipped}`);
        return { decision: decide(p.name, false, skipped) };
      }
      const { content, cached } = await cachedPromptContent(client, integration, p.name, args,
        async () => promptBody(await client.getPrompt({ name: p.name, arguments: args }, { timeout: GET_TIMEOUT_MS })));
      if (!content.trim() && detectConventionalPrompt(p.name)?.kind !== 'tool_result') {
        log.warn({ prompt: p.name }, 'conventional prompt skipped: its content is empty');
        return { decision: decide(p.name, false, 'its content is empty') };
      }
      return {
        prompt: { integrationId: integration.id, serverName: integration.name, name: p.name, content },
        decision: decide(p.name, true, `${injectedReason(source, p.name)}${cached ? ' (kept from an earlier fetch: promptCacheTtl)' : ''}`),
      };
    }));
    return {
      prompts: outcomes.flatMap((o) => (o.prompt ? [o.prompt] : [])),
      decisions: outcomes.map((o) => o.decision),
    };
  });
}
