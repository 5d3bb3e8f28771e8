import type { DiscoveredIntegration } from '../core/mcp/discover';
import type { ToolDefinition } from '../core/messages';
import { NATIVE_TOOL_NAMES } from '../workflows/tool-routing';

/** Contract schemas of the native tools (ARCHITECTURE.md). Descriptions grow with discovery. */
const NATIVE_TOOLS: Record<string, ToolDefinition> = {
  [NATIVE_TOOL_NAMES.resource]: {
    name: NATIVE_TOOL_NAMES.resource,
    description: 'Retrieve a resource from an MCP integration. CSV resources are imported as data sources that source_query can query; text is returned directly.',
    inputSchema: {
      type: 'object',
      properties: {
        integrationId: { type: 'string', description: 'The id or name of the integration.' },
        resourceUri: { type: 'string', description: 'The URI of the resource, or of a resource template.' },
        parameters: { type: 'object', description: 'Values for the parameters of a resource template.' },
      },
      required: ['integrationId', 'resourceUri'],
    },
  },
  [NATIVE_TOOL_NAMES.prompt]: {
    name: NATIVE_TOOL_NAMES.prompt,
    description: 'Retrieve a prompt template from an MCP integration: predefined messages that guide a task. Pass the arguments the prompt lists; those marked required must be given.',
    inputSchema: {
      type: 'object',
      properties: {
        integrationId: { type: 'string', description: 'The id or name of the integration.' },
        promptName: { type: 'string', description: 'The name of the prompt.' },
        arguments: { type: 'object', description: 'Arguments of the prompt.' },
      },
      required: ['integrationId', 'promptName'],
    },
  },
  [NATIVE_TOOL_NAMES.sourceQuery]: {
    name: NATIVE_TOOL_NAMES.sourceQuery,
    description: "Run one read-only SQL query over this thread's data sources.",
    inputSchema: {
      type: 'object',
      properties: {
        sql: { type: 'string', description: 'One SELECT, VALUES, TABLE or WITH statement.' },
        limit: { type: 'integer', description: 'The maximum number of rows to return.' },
      },
      required: ['sql'],
    },
  },
};

/** Bounds the catalogue in descriptions: a server with thousands of resources must not fill the context. */
const MAX_LISTED = 50;

function listed<T>(items: T[], show: (item: T) => string): string {
  const shown = items.slice(0, MAX_LISTED).map(show).join('; ');
  return items.length > MAX_LISTED ? `${shown}; … and ${items.length - MAX_LISTED} more` : shown;
}

/** Short enough that fifty prompts still fit in a description. */
const MAX_PROMPT_DESCRIPTION = 120;

/** A prompt as the LLM needs it to call retrieve_mcp_prompt: name, what it is for, and its arguments. */
function promptEntry(p: DiscoveredIntegration['prompts'][number]): string {
  const about = p.description ? ` - ${p.description.length > MAX_PROMPT_DESCRIPTION ? `${p.description.slice(0, MAX_PROMPT_DESCRIPTION)}…` : p.description}` : '';
  const args = (p.arguments ?? []).map((a) => (a.required ? `${a.name} (required)` : a.name));
  return `${p.name}${about}${args.length ? ` [arguments: ${args.join(', ')}]` : ''}`;
}

/** Tells the LLM which integrations exist and what each offers, so it can fill integrationId and the rest. */
function integrationCatalogue(integrations: DiscoveredIntegration[], tool: string): string {
  if (integrations.length === 0) return '';
  const lines = integrations.map((i) => {
    const head = `- ${i.id} (name: ${i.name})`;
    if (i.status === 'unreachable') return `${head}: unreachable (${i.error ?? 'no answer'})`;
    if (tool === NATIVE_TOOL_NAMES.resource) {
      const parts = [
        i.resources.length ? `resources: ${listed(i.resources, (r) => `${r.uri} (${r.name})`)}` : '',
        i.resourceTemplates.length ? `templates: ${listed(i.resourceTemplates, (t) => `${t.uriTemplate} (${t.name})`)}` : '',
      ].filter(Boolean);
      return `${head}: ${parts.join('; ') || 'no resources'}`;
    }
    if (tool === NATIVE_TOOL_NAMES.prompt) {
      return `${head}: ${i.prompts.length ? `prompts: ${listed(i.prompts, promptEntry)}` : 'no prompts'}`;
    }
    return head;
  });
  return `\n\nIntegrations (use the id or the name as integrationId):\n${lines.join('\n')}`;
}

/** `sourceCatalogue`: the thread's tables for source_query (or why it is off), built by activities/source-query.ts. */
export function nativeToolDefinitions(names: string[], integrations: DiscoveredIntegration[] = [], sourceCatalogue = ''): ToolDefinition[] {
  return names.flatMap((n) => {
    const tool = NATIVE_TOOLS[n];
    if (!tool) return [];
    if (n === NATIVE_TOOL_NAMES.sourceQuery) return [{ ...tool, description: tool.description + sourceCatalogue }];
    return [{ ...tool, description: tool.description + integrationCatalogue(integrations, n) }];
  });
}

/** The discovered MCP tools of reachable integrations, under the names the workflow routes. */
export function mcpToolDefinitions(integrations: (DiscoveredIntegration & { exposedToolNames: string[] })[]): ToolDefinition[] {
  return integrations.flatMap((i) => (i.status !== 'ok' ? [] : i.tools.map((t, k) => ({
    name: i.exposedToolNames[k],
    description: t.description ?? t.title ?? t.name,
    inputSchema: t.inputSchema,
  }))));
}
