import { argumentsText } from './approval-prompt';

/*
 * Caller tools from the CLI: a run declares them from a file (`run --caller-tools`), `run --follow`
 * prints each call of one with the command that answers it (caller-tool-commands.ts).
 */

/** The line `run --follow` prints for a call of a caller tool: the call, and how to answer it. */
export function callerToolCallLine(runId: string, data: Record<string, unknown>): string {
  const answer = `agent-engine tool-result ${runId} ${String(data.toolCallId)} "<result>" [--error]`;
  return `  ⇄ ${String(data.name)} ${argumentsText(data.arguments)} waits for its caller: ${answer}`;
}
