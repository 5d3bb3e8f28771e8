import type { AnyToolHandler } from '../tool-handler';
import { mcpTool } from './mcp-tool';
import { promptExecution } from './prompt';
import { resourceExecution } from './resource';
import { sourceQueryExecution } from './source-query';
import { subAgentCall } from './sub-agent';

/** The native tools' executions: a new native tool is its declaration (core/native-tools.ts), its execution, and one line here. */
const nativeHandlers: AnyToolHandler[] = [
  resourceExecution,
  promptExecution,
  sourceQueryExecution,
];

/** The tool activities, by the name each kind's declaration gives its activity (MCP tools: workflows/tool-kinds.ts). */
export const toolHandlers: Record<string, AnyToolHandler> = {
  callMcpTool: mcpTool,
  startSubAgent: subAgentCall,
  ...Object.fromEntries(nativeHandlers.map((h) => [h.native!.tool.activity, h])),
};

export const nativeTools = nativeHandlers.map((h) => h.native!);
