import type { Client, Tool } from '@modelcontextprotocol/client';
import type { DiscoveredIntegration } from '../core/discovery';
import type { Integration } from '../core/integration';
import type { Logger } from '../platform/logger';
import { withDeadline } from '../platform/deadline';
import { mcpErrorText } from '../core/mcp-error-text';
import { keptList, type ListKind } from './list-cache';
import { isAuthorizationRequired } from './oauth/oauth-provider';
import type { McpPool } from './connections/pool';
import { toolTaskSupport, type TaskSupport } from './tool-calls/tasks';

const LIST_TIMEOUT_MS = 10_000;
/** A server that pages forever must not stall discovery. */
const MAX_PAGES = 20;

async function allPages<T>(list: (cursor?: string) => Promise<{ items: T[]; nextCursor?: string }>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await list(cursor);
    items.push(...res.items);
    if (!res.nextCursor) break;
    cursor = res.nextCursor;
  }
  return items;
}

/** A list the server does not support, or fails, is empty: one broken capability must not hide the others. */
async function guarded<T>(supported: boolean, what: string, logger: Logger, list: () => Promise<T[]>): Promise<T[]> {
  if (!supported) return [];
  try {
    return await list();
  } catch (err) {
    // Not a broken capability: the whole server refuses until an operator authorizes it.
    if (isAuthorizationRequired(err)) throw err;
    logger.warn({ what, err: (err as Error).message }, 'MCP list call failed; treating it as empty');
    return [];
  }
}

type Page<T> = { items: T[]; nextCursor?: string };
type ListPage<T> = (params?: { cursor?: string }) => Promise<Page<T>>;

/**
 * One list of the server's, all pages, through `fetch` (one list call: without params the SDK walks
 * every page; with a cursor it answers that page). On the 2026 era the SDK's own walk, whose answer
 * its response cache serves again while the server's `ttlMs` says it is fresh (the server decides;
 * without a TTL it is asked every time). On the 2025 era, pages of our own, kept while the server
 * promises to announce changes (list-cache.ts).
 */
async function listAll<T>(client: Client, kind: ListKind, key: string, fetch: ListPage<T>): Promise<T[]> {
  if (client.getProtocolEra() === 'modern') return (await fetch()).items;
  return keptList(client, kind, key, () => allPages((cursor) => fetch({ cursor })));
}

/** Lists what the server supports, each list as kept for the connection when the server allows it. */
export async function listCapabilities(client: Client, logger: Logger): Promise<Omit<DiscoveredIntegration, 'id' | 'name' | 'status'>> {
  const caps = client.getServerCapabilities() ?? {};
  const opts = { timeout: LIST_TIMEOUT_MS };
  const list = <T>(supported: unknown, what: string, kind: ListKind, key: string, fetch: ListPage<T>) =>
    guarded(Boolean(supported), what, logger, () => listAll(client, kind, key, fetch));
  const [tools, resources, resourceTemplates, prompts] = await Promise.all([
    list(caps.tools, 'tools', 'tools', 'tools', async (params) => {
      const r = await client.listTools(params, opts);
      return { items: r.tools, nextCursor: r.nextCursor };
    }),
    list(caps.resources, 'resources', 'resources', 'resources', async (params) => {
      const r = await client.listResources(params, opts);
      return { items: r.resources, nextCursor: r.nextCursor };
    }),
    list(caps.resources, 'resource templates', 'resources', 'resourceTemplates', async (params) => {
      const r = await client.listResourceTemplates(params, opts);
      return { items: r.resourceTemplates, nextCursor: r.nextCursor };
    }),
    list(caps.prompts, 'prompts', 'prompts', 'prompts', async (params) => {
      const r = await client.listPrompts(params, opts);
      return { items: r.prompts, nextCursor: r.nextCursor };
    }),
  ]);
  const support = await taskSupports(client, tools);
  return {
    tools: tools.map((t, i) => ({
      name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema as Record<string, unknown>,
      annotations: t.annotations, ...(support[i] !== 'none' ? { taskSupport: support[i] as 'optional' | 'required' } : {}),
    })),
    resources: resources.map((r) => ({ uri: r.uri, name: r.name, description: r.description, mimeType: r.mimeType })),
    resourceTemplates: resourceTemplates.map((r) => ({
      uriTemplate: r.uriTemplate, name: r.name, description: r.description, mimeType: r.mimeType,
    })),
    prompts: prompts.map((p) => ({ name: p.name, description: p.description, arguments: p.arguments })),
  };
}

/** Whether each tool may run as a task: only on a server that declares tasks (or, on the 2026 era, an extension). */
async function taskSupports(client: Client, tools: Tool[]): Promise<TaskSupport[]> {
  const caps = client.getServerCapabilities() ?? {};
  if (!caps.tasks && !(caps as { extensions?: unknown }).extensions) return tools.map(() => 'none');
  return Promise.all(tools.map((t) => toolTaskSupport(client, t).catch(() => 'none' as const)));
}

/** Lists one integration's capabilities within timeoutMs; an unreachable server is reported, never thrown. */
export async function discoverIntegration(
  pool: McpPool, integration: Integration, logger: Logger, timeoutMs: number,
): Promise<DiscoveredIntegration> {
  const log = logger.child({ integrationId: integration.id });
  const head = { id: integration.id, name: integration.name };
  try {
    const listed = await withDeadline(pool.withClient(integration, (client) => listCapabilities(client, log)), timeoutMs);
    return { ...head, status: 'ok', ...listed };
  } catch (err) {
    const message = mcpErrorText(err);
    log.warn({ err: message }, 'MCP integration unreachable during discovery');
    return {
      ...head, status: 'unreachable', error: message, ...(isAuthorizationRequired(err) ? { needsAuthorization: true } : {}),
      tools: [], resources: [], resourceTemplates: [], prompts: [],
    };
  }
}
