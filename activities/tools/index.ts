import type { AnyToolHandler } from '../tool-call';
import { mcpTool } from './mcp-tool';
import { promptTool } from './prompt';
import { resourceTool } from './resource';
import { sourceQueryTool } from './source-query';

/**
 * The tool activities, by the name workflows/tool-kinds.ts gives each kind: a new tool is one
 * handler file and one line here (plus its entry in that table).
 */
export const toolHandlers = {
  callMcpTool: mcpTool,
  retrieveResource: resourceTool,
  retrievePrompt: promptTool,
  sourceQuery: sourceQueryTool,
} satisfies Record<string, AnyToolHandler>;

export const nativeTools = Object.values(toolHandlers).flatMap((h) => (h.native ? [h.native] : []));
