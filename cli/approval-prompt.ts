import { ApiError, type ApiClient } from './api-client';
import type { StreamEvent } from './event-stream';
import type { Output, ProgressDisplay } from './progress';
import { shortened } from '../core/truncated-text';

export interface PendingApproval {
  toolCallId: string; turn: number; name: string; integrationId: string | null; arguments: unknown; requestedAt: string; expiresAt: string;
}

const ARGUMENTS_SHOWN_CHARS = 300;
export const argumentsText = (args: unknown) => {
  return shortened(JSON.stringify(args ?? {}), ARGUMENTS_SHOWN_CHARS);
};
export const decisionPath = (runId: string, toolCallId: string) =>
  `/v1/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(toolCallId)}`;

/** What the prompter needs of the CLI's context. */
interface Asker {
  err: Output;
  interactive: boolean;
  ask(question: string): Promise<string | null>;
}

/**
 * A tool call waiting for approval, or a sampling request waiting for one (asked by its samp_… id,
 * showing what the model would get).
 */
function asApprovalRequest(e: StreamEvent): StreamEvent | undefined {
  if (e.event === 'approval_requested') return e;
  if (e.event !== 'sampling_requested' || !e.data.needsApproval || e.data.status !== 'pending') return undefined;
  return { ...e, data: { toolCallId: e.data.samplingId, name: `sampling for ${String(e.data.name)}`, arguments: e.data.request } };
}

/**
 * While `run --follow` follows a run: on a terminal, each approval_requested becomes a question
 * (one at a time) whose answer is sent as the decision; without one, the pending call is printed
 * with the command that decides it, and following goes on.
 */
export function approvalPrompter(ctx: Asker, api: ApiClient, runId: string, display: ProgressDisplay) {
  let queue: Promise<void> = Promise.resolve();
  const ask = async (e: StreamEvent) => {
    const toolCallId = String(e.data.toolCallId ?? '');
    display.pause();
    const answer = await ctx.ask(`Approve ${String(e.data.name)} ${argumentsText(e.data.arguments)}? [y/N] `);
    const decision = answer !== null && /^\s*y/i.test(answer) ? 'approve' : 'deny';
    try {
      await api.post(decisionPath(runId, toolCallId), { decision });
    } catch (err) {
      // Decided elsewhere meanwhile, or timed out: the stream shows how it ended.
      ctx.err.write(`could not ${decision} ${toolCallId}: ${err instanceof ApiError ? err.message : String(err)}\n`);
    }
    display.resume();
  };
  return (raw: StreamEvent): void => {
    const e = asApprovalRequest(raw);
    if (!e) return;
    if (!ctx.interactive) {
      const decide = `agent-engine approve|deny ${runId} ${String(e.data.toolCallId)}`;
      display.line(`  ? ${String(e.data.name)} ${argumentsText(e.data.arguments)} waits for approval: ${decide}`);
      return;
    }
    queue = queue.then(() => ask(e));
  };
}
