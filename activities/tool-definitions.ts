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
    description: 'Retrieve a prompt template from an MCP integration.',
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

export function nativeToolDefinitions(names: string[]): ToolDefinition[] {
  return names.flatMap((n) => (NATIVE_TOOLS[n] ? [NATIVE_TOOLS[n]] : []));
}
