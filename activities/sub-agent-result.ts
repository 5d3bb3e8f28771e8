import { subAgentText } from '../core/sub-agents';
import type { ToolOutcome } from '../core/tool-call';
import { eventWrite } from '../store/runs/events';
import { findToolCallAndRequest } from '../store/runs/tool-calls';
import { childRunEnd } from '../store/sub-agents';
import type { ActivityDeps } from './deps';
import { storeToolResult } from './tool-call';
import type { ToolActivityInput, ToolResult } from './tool-handler';

type ChildEnd = NonNullable<Awaited<ReturnType<typeof childRunEnd>>>;

/** What the parent's LLM reads of its sub-agent's run: its answer, or why there is none. */
function resultOf(name: string, end: ChildEnd): ToolResult {
  if (end.status === 'completed') {
    const output = end.output ?? '';
    if (end.stopReason === 'answer') return { status: 'ok', content: output };
    return { status: 'ok', content: subAgentText.stopped(name, end.stopReason ?? 'stopped', output) };
  }
  if (end.status === 'cancelled') return { status: 'error', content: subAgentText.cancelled(name) };
  return { status: 'error', content: subAgentText.failed(name, end.error?.message ?? 'the run failed') };
}

export function createSubAgentActivities({ db }: ActivityDeps) {
  return {
    /**
     * A sub-agent's run has ended (or its workflow failed, `failure`): its answer becomes the
     * parent's tool result, with the child's id on the call. A result stored before stands.
     */
    async recordSubAgentResult(input: ToolActivityInput & { childRunId: string; failure?: string }): Promise<ToolOutcome> {
      const { childRunId, failure, route: _route, subAgent, ...ref } = input;
      const { stored } = await findToolCallAndRequest(db, ref.runId, ref.turn, ref.index + 1);
      if (stored) return { status: stored.status, resultBytes: stored.resultBytes };
      const name = subAgent?.agentName ?? ref.name;
      const end = await childRunEnd(db, childRunId);
      const result = end
        ? resultOf(name, end)
        : { status: 'error' as const, content: subAgentText.failed(name, failure ?? 'the run ended without a result') };
      const ended = eventWrite(ref.runId, ref.eventSeq + 2, 'child_run_ended', {
        toolCallId: ref.toolCallId, childRunId, status: end?.status ?? 'failed', stopReason: end?.stopReason ?? null,
      });
      const alsoWrite = ref.childEvents ? [ended] : [];
      return storeToolResult(db, ref, { ...result, durationMs: end?.durationMs ?? 0, childRunId, alsoWrite });
    },
  };
}
