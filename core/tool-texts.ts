/**
 * The exact texts the LLM sees when a tool call goes wrong (contract: docs/tools.md, "Texts the LLM reads").
 * Pure, so that workflow code may import it: the workflow answers unknown tools and activities that gave up.
 */
export const toolResultText = {
  unknownTool: (name: string) =>
    `A tool with the name ${name} was not found. Only use tools that are available in your given list of tools.`,
  mcpToolFailed: (message: string) => `MCP tool execution failed: ${message}`,
  mcpToolTimedOut: (ms: number) => `MCP tool execution failed: timed out after ${ms} ms`,
  mcpToolUnexpected: (message: string) => `MCP tool execution failed unexpectedly: ${message}`,
  mcpToolMissingIntegration: () => 'MCP tool configuration error: missing integration ID',
  /**
   * the message of a call that waited longer than its bound for a worker to run it
   * (activities/tool-slots.ts); the kind's failure text wraps it
   */
  waitedForTurn: (ms: number, busy: { integrationName: string; maxConcurrentCalls: number; tenantToolCallSlots?: number }) =>
    `timed out after ${ms} ms waiting for its turn: `
    + (busy.tenantToolCallSlots !== undefined
      ? `a worker runs at most ${busy.tenantToolCallSlots} tool calls of this tenant's runs at once`
      : `a worker runs at most ${busy.maxConcurrentCalls} calls of integration ${busy.integrationName} at once`),
  /** an OAuth-protected server without (working) authorization; the tool call's text is mcpToolFailed of it */
  needsAuthorization: (integrationName: string) => `integration ${integrationName} needs authorization; an operator must authorize it`,
  /** its authorization server down (5xx, or no answer) when the token had to be refreshed: the tokens are kept */
  authorizationServerDown: (integrationName: string, why: string) =>
    `the authorization server of integration ${integrationName} did not answer the token refresh (${why}); `
    + 'the tokens are kept, and a later call refreshes them',
  /** a 2026-era server's questions past the bounds of mcp-client/tool-calls/input-rounds.ts (16 questions, 64 KiB of state) */
  mcpQuestionTooLarge: () => 'MCP server question too large; the call was abandoned.',
  mcpTooManyRounds: (rounds: number) => `MCP server asked for input more than ${rounds} times; the call was abandoned.`,
  /** a 2026-era server's question that waited (durably) longer than the integration's elicitationTimeout */
  mcpQuestionNotAnswered: (timeout: string) => `MCP server question not answered within ${timeout}.`,
  /** the server refused the requestState it had given (-32602) when the call came back with the answers */
  mcpQuestionExpired: () => 'MCP server question expired before it was answered.',
  /** sampling or roots, asked by a 2026-era server in the middle of a call */
  mcpQuestionUnsupported: (method: string) => `MCP server asked for ${method}, which this engine does not answer; the call was abandoned.`,
  resourceFailed: (message: string) => `Resource retrieval failed: ${message}`,
  promptFailed: (message: string) => `Prompt retrieval failed: ${message}`,
  sourceQueryFailed: (message: string) => `Source query failed: ${message}`,
};

/** What the LLM reads for a tool call the budget did not let it make. */
export const toolCallOverBudgetText = (max: number) => `Tool call not made: the run reached its limit of ${max} tool calls.`;

/** What the LLM reads for each call of a turn past the run's maxToolCallsPerTurn (contract): the first that many run. */
export const tooManyToolCallsText = (max: number) =>
  `Too many tool calls in one turn: at most ${max} run; call the others in a later turn.`;

/** What the LLM reads for a tool call not made because the run's time was up. */
export const durationOverBudgetText = (formatted: string) => `Tool call not made: the run passed its time limit of ${formatted}.`;

/** What the run object keeps of a tool result. */
export const RESULT_PREVIEW_BYTES = 2048;
