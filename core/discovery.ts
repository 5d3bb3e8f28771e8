/** What one integration offers, as listed once per run and kept in the run's discovery snapshot. */
export interface DiscoveredTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean; openWorldHint?: boolean; title?: string };
  /** the server may run a call of it as a task (MCP tasks: 2025-11-25 execution.taskSupport, or the 2026-07-28 extension) */
  taskSupport?: 'optional' | 'required';
}

export interface DiscoveredIntegration {
  id: string;
  name: string;
  status: 'ok' | 'unreachable';
  error?: string;
  /** unreachable because the server needs OAuth authorization an operator must give */
  needsAuthorization?: boolean;
  tools: DiscoveredTool[];
  resources: { uri: string; name: string; description?: string; mimeType?: string }[];
  resourceTemplates: { uriTemplate: string; name: string; description?: string; mimeType?: string }[];
  prompts: { name: string; description?: string; arguments?: { name: string; description?: string; required?: boolean }[] }[];
}
