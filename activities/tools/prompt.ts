import { z } from 'zod';
import { promptKind } from '../../core/native-tool-kinds';
import { toolResultText } from '../../core/tool-texts';
import type { DiscoveredIntegration } from '../../core/discovery';
import { mcpErrorText } from '../../core/mcp-error-text';
import { formatPromptResult } from '../../mcp-client/prompt-text';
import { runIntegrations } from '../run-snapshots';
import type { ToolHandler, ToolRun, ToolResult } from '../tool-handler';
import { integrationCatalogue, listed, runIntegration } from './integration-catalogue';
import { usableIntegration } from './usable-integration';
import { objectOf, requiredString, type NativeTool, type ToolArgs } from './native-tool';
import { shortened } from '../../core/truncated-text';

/** The tracing span of a retrieval; logs carry the name too. */
export const PROMPT_RETRIEVAL_SPAN = 'mcp_prompt_retrieval';
/** prompts/get is a read, not a long job: bounded well inside the activity's timeout, whatever the integration allows tools. */
const MAX_PROMPT_TIMEOUT_MS = 60_000;
/** Short enough that fifty prompts still fit in a description. */
const MAX_PROMPT_DESCRIPTION = 120;

const failed = (message: string): ToolResult => ({ status: 'error', content: toolResultText.promptFailed(message) });

interface Request {
  integrationId: string;
  promptName: string;
  arguments: Record<string, string>;
  /** from the listing: many servers (the SDK's McpServer among them) leave it out of prompts/get */
  listedDescription?: string;
}

/** MCP prompt arguments are strings; an LLM may send numbers or booleans, which mean the same. */
function stringArguments(args: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
  return out;
}

async function fetchPrompt(request: Request, run: ToolRun): Promise<ToolResult> {
  const integration = await usableIntegration(run.deps.db, request.integrationId, { pinnedAllowed: false });
  if (typeof integration === 'string') return failed(integration);
  try {
    const result = await run.deps.mcpPool.withClient(integration, (client) => client.getPrompt(
      { name: request.promptName, arguments: request.arguments },
      { timeout: Math.min(integration.toolTimeoutMs, MAX_PROMPT_TIMEOUT_MS), signal: run.signal },
    ));
    const description = result.description ?? request.listedDescription;
    return { status: 'ok', content: formatPromptResult(request.promptName, { ...result, description }) };
  } catch (err) {
    if (run.signal.aborted) throw run.signal.reason ?? err;
    return failed(mcpErrorText(err));
  }
}

/** A prompt as the LLM needs it to call retrieve_mcp_prompt: name, what it is for, and its arguments. */
function promptEntry(p: DiscoveredIntegration['prompts'][number]): string {
  const described = p.description ? ` - ${shortened(p.description, MAX_PROMPT_DESCRIPTION + 1)}` : '';
  const args = (p.arguments ?? []).map((a) => (a.required ? `${a.name} (required)` : a.name));
  return `${p.name}${described}${args.length ? ` [arguments: ${args.join(', ')}]` : ''}`;
}

/** retrieve_mcp_prompt {integrationId, promptName, arguments?}: the contract schema (docs/tools.md). */
export const promptTool: NativeTool<{ integrationId: string; promptName: string; arguments?: Record<string, unknown> }> = {
  ...promptKind,
  input: z.object({
    integrationId: requiredString('integrationId').describe('The id or name of the integration.'),
    promptName: requiredString('promptName').describe('The name of the prompt.'),
    arguments: objectOf('arguments', 'argument names').optional().describe('Arguments of the prompt.'),
  }),
};

/** The prompt as the contract text. */
export const promptExecution: ToolHandler<Request, ToolArgs<typeof promptTool>> = {
  native: {
    tool: promptTool,
    describe: ({ integrations }) => 'Retrieve a prompt template from an MCP integration: predefined messages that guide a task. '
      + 'Pass the arguments the prompt lists; those marked required must be given.'
      + integrationCatalogue(integrations, (i) => (i.prompts.length ? `prompts: ${listed(i.prompts, promptEntry)}` : 'no prompts')),
  },
  span: () => PROMPT_RETRIEVAL_SPAN,
  usesIntegrationSlot: true,
  logFields: (args) => ({ integrationId: args.integrationId, promptName: args.promptName, operationType: 'prompt_retrieval' }),
  check: async (params, input, { db }) => {
    const { integrationId, promptName } = params;
    const integration = runIntegration(await runIntegrations(db, input.runId), integrationId);
    if (!integration) return failed(`integration ${integrationId} is not available to this agent`);
    const refused = (message: string) => ({ ...failed(message), integrationId: integration.id });
    if (integration.status === 'unreachable') {
      return refused(`integration ${integration.name} is unreachable (${integration.error ?? 'no answer'})`);
    }
    const prompt = integration.prompts.find((p) => p.name === promptName);
    if (!prompt) {
      const names = integration.prompts.map((p) => p.name).join(', ') || 'none';
      return refused(`prompt ${promptName} was not found on integration ${integration.name} (available prompts: ${names})`);
    }
    const args = stringArguments(params.arguments ?? {});
    const missing = (prompt.arguments ?? []).filter((a) => a.required && args[a.name] === undefined).map((a) => a.name);
    if (missing.length > 0) return refused(`missing required arguments: ${missing.join(', ')}`);
    return {
      request: { integrationId: integration.id, promptName, arguments: args, listedDescription: prompt.description },
      integrationId: integration.id, integrationName: integration.name,
      logFields: { hasArguments: Object.keys(args).length > 0 },
    };
  },
  execute: fetchPrompt,
};
