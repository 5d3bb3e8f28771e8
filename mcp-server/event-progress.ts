import { APPROVAL_STATUS_WORDS, type ApprovalStatus } from '../core/approval';
import type { RunEvent } from '../use-cases/runs/follow-events';

/** A run's event as a progress message for the MCP client following it; undefined for the events it is not told. */
export function describeEvent(runId: string, event: RunEvent, asksClient: boolean): string | undefined {
  const d = event.data;
  switch (event.type) {
    case 'turn_started': return `Turn ${String(d.turn)}`;
    case 'tool_call_started': return `Calling ${String(d.name)}`;
    case 'tool_call_ended': return `${String(d.name)} ${d.status === 'ok' ? 'returned' : 'failed'} after ${String(d.durationMs)} ms`;
    case 'approval_requested': {
      const toolCallId = String(d.toolCallId);
      const where = `POST /v1/runs/${runId}/approvals/${toolCallId} or agent-engine approve|deny ${runId} ${toolCallId}`;
      return asksClient
        ? `Waiting for approval of ${String(d.name)}: answer the question, or decide with ${where}`
        : `Waiting for approval of ${String(d.name)}: the run waits until it is decided with ${where}`;
    }
    case 'approval_resolved': return `${String(d.name)} ${APPROVAL_STATUS_WORDS[d.status as ApprovalStatus] ?? String(d.status)}`;
    default: return undefined;
  }
}
