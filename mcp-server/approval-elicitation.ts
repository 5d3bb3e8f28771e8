import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/server';
import type { ApprovalDecision } from '../core/approval';
import type { Logger } from '../platform/logger';
import { requestedArguments, type ApprovalDeps } from '../use-cases/runs/approvals';
import type { RunEvent } from '../use-cases/runs/follow-events';
import { shortened } from '../core/truncated-text';
import { settledElsewhere } from './engine-errors';

/**
 * Deciding a run's approvals through the MCP client that started it: over stdio (`agent-engine
 * mcp`) the client is one person's, so when it declared elicitation, its user is asked (a form:
 * approve or deny, and a reason) and the answer is applied as the REST API applies a decision.
 * Accept applies the chosen decision; decline denies; cancel (the form dismissed) leaves the call
 * waiting for the REST API, the CLI or the timeout.
 */

/** Asks the client's user; rejects when the client cannot be asked or goes away. */
export type AskClient = (params: ElicitRequestFormParams, signal: AbortSignal) => Promise<ElicitResult>;

/** Applies a decision (the same path as `POST /v1/runs/:id/approvals/:toolCallId`). */
export type ApplyDecision = (req: { runId: string; toolCallId: string; decision: ApprovalDecision; reason?: string }) => Promise<unknown>;

/** The arguments, as JSON, in the question: enough to judge the call, bounded so a large payload does not drown the form. */
const ARGUMENTS_CHARS = 2_000;

export function approvalForm(name: string, args: unknown): ElicitRequestFormParams {
  const json = shortened(JSON.stringify(args ?? {}), ARGUMENTS_CHARS);
  return {
    mode: 'form',
    message: `The agent wants to call ${name} ${json}. Approve this tool call?`,
    requestedSchema: {
      type: 'object',
      properties: {
        decision: {
          type: 'string', title: 'Decision', enum: ['approve', 'deny'],
          description: 'approve runs the tool; deny tells the agent it may not',
        },
        reason: { type: 'string', title: 'Reason', description: 'Optional; with deny the agent reads it', maxLength: 1_000 },
      },
      required: ['decision'],
    },
  };
}

/** What an answer to approvalForm decides; undefined when the user dismissed it. */
export function decisionOf(result: ElicitResult): { decision: ApprovalDecision; reason?: string } | undefined {
  if (result.action === 'decline') return { decision: 'deny' };
  if (result.action !== 'accept') return undefined;
  const decision = result.content?.decision;
  if (decision !== 'approve' && decision !== 'deny') return undefined;
  const reason = typeof result.content?.reason === 'string' && result.content.reason.trim() ? result.content.reason.trim() : undefined;
  return { decision, ...(reason ? { reason } : {}) };
}

/**
 * Asks about one approval_requested event and applies the answer. Never throws: a call decided
 * meanwhile elsewhere (409), a client that cannot answer, or one that went away leave the run as it is.
 */
export async function askForApproval(
  deps: { db: ApprovalDeps['db']; logger: Logger; ask: AskClient; apply: ApplyDecision }, runId: string, event: RunEvent,
  signal: AbortSignal,
): Promise<void> {
  const { toolCallId, name } = event.data as { toolCallId: string; name: string };
  try {
    const args = await requestedArguments(deps.db, runId, event);
    const answer = decisionOf(await deps.ask(approvalForm(name, args), signal));
    if (!answer || signal.aborted) return;
    await deps.apply({ runId, toolCallId, ...answer });
  } catch (err) {
    // Decided meanwhile (through the API, the CLI or the timeout), or the call ended and no longer asks.
    if (settledElsewhere(err) || signal.aborted) return;
    deps.logger.warn({ runId, toolCallId, err: (err as Error).message },
      'asking the MCP client about an approval failed; the call waits for another decision');
  }
}
