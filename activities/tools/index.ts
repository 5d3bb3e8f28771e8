import { NATIVE_TOOL_KINDS, type NativeToolActivity, type NativeToolKind } from '../../core/native-tool-kinds';
import type { AnyToolHandler } from '../tool-handler';
import { mcpTool } from './mcp-tool';
import { promptExecution } from './prompt';
import { resourceExecution } from './resource';
import { sourceQueryExecution } from './source-query';
import { subAgentCall } from './sub-agent';
import { callerToolCall } from './caller-tool';

/**
 * The tool activities, by the name each kind gives its activity: MCP tools', sub-agents' and caller tools' in
 * workflows/tool-kinds.ts, the native tools' in their kinds (core/native-tool-kinds.ts). A native
 * tool's execution is registered here in one line, and the compiler asks for every kind's.
 */
export const toolHandlers = {
  callMcpTool: mcpTool,
  startSubAgent: subAgentCall,
  askCallerTool: callerToolCall,
  retrieveResource: resourceExecution,
  retrievePrompt: promptExecution,
  sourceQuery: sourceQueryExecution,
} satisfies Record<NativeToolActivity | 'callMcpTool' | 'startSubAgent' | 'askCallerTool', AnyToolHandler>;

/** The execution registered for a native tool's kind, which must be that tool's. */
function nativeExecution(kind: NativeToolKind & { activity: NativeToolActivity }) {
  const native = toolHandlers[kind.activity].native;
  if (native?.tool.name !== kind.name) throw new Error(`the activity ${kind.activity} is registered with another tool's execution`);
  return native;
}

/** The native tools' declarations and descriptions, in the order the LLM sees them. */
export const nativeTools = NATIVE_TOOL_KINDS.map(nativeExecution);
