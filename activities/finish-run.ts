import { ApplicationFailure } from '@temporalio/activity';
import type { RunError, RunStatus, StopReason } from '../core/contract/run';
import { cancelPendingApprovals } from '../core/db/approvals';
import { inTransaction } from '../core/db/pool';
import {
  appendEvent, findRun, findRunResult, insertRunResult, listToolCalls, runTranscript, type StoredRunMessage,
} from '../core/db/run-store';
import type { ChatMessage, Usage } from '../core/messages';
import { emitRunSpan, type RunSummary } from '../core/tracing/run-trace';
import type { ActivityDeps } from './deps';

export interface FinishRunInput {
  runId: string;
  status: Exclude<RunStatus, 'running'>;
  stopReason: StopReason;
  error: RunError | null;
  turns: number;
  usage: Usage;
  eventSeq: number;
}

/**
 * The messages a thread keeps from a run. A run that ended early keeps only whole turns:
 * an assistant tool call without its result would be an invalid conversation for the next run.
 */
export function committableMessages(transcript: StoredRunMessage[]): ChatMessage[] {
  const byTurn = new Map<number, StoredRunMessage[]>();
  for (const m of transcript) byTurn.set(m.turn, [...(byTurn.get(m.turn) ?? []), m]);
  const kept: ChatMessage[] = [];
  for (const turn of [...byTurn.keys()].sort((a, b) => a - b)) {
    const rows = byTurn.get(turn)!;
    const head = rows.find((r) => r.slot === 0)?.message;
    if (!head) break;
    if (head.role === 'assistant' && (head.toolCalls?.length ?? 0) !== rows.length - 1) break;
    kept.push(...rows.map((r) => r.message));
  }
  return kept;
}

function finalText(transcript: StoredRunMessage[]): string | null {
  for (let i = transcript.length - 1; i >= 0; i--) {
    const m = transcript[i].message;
    if (m.role === 'assistant') return m.content;
  }
  return null;
}

export function createFinishRunActivities({ db, logger }: ActivityDeps) {
  return {
    /** Commits the run's messages to its thread and writes the write-once result, in one transaction. */
    async finishRun(input: FinishRunInput): Promise<void> {
      let summary: RunSummary | undefined;
      await inTransaction(db, async (tx) => {
        if (await findRunResult(tx, input.runId)) return;
        const run = await findRun(tx, input.runId);
        if (!run) throw ApplicationFailure.nonRetryable(`Run ${input.runId} does not exist`, 'RunNotFound');
        const transcript = await runTranscript(tx, input.runId);
        const messages = committableMessages(transcript);
        await tx.query('SELECT 1 FROM threads WHERE id = $1 FOR UPDATE', [run.threadId]);
        // All of them in one statement, numbered after the thread's last message (the row lock above orders writers).
        await tx.query(
          `INSERT INTO messages (thread_id, seq, run_id, message)
           SELECT $1, (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE thread_id = $1) + n, $2, m
           FROM unnest($3::jsonb[]) WITH ORDINALITY AS t(m, n)`,
          [run.threadId, run.id, messages.map((m) => JSON.stringify(m))],
        );
        const toolCalls = (await listToolCalls(tx, input.runId)).map(({ slot: _slot, ...call }) => call);
        const text = input.status === 'completed' ? finalText(transcript) : null;
        await insertRunResult(tx, {
          runId: run.id, threadId: run.threadId, agentId: run.agentId, status: input.status, stopReason: input.stopReason,
          output: input.stopReason === 'max_turns' && !text ? null : text, error: input.error, turns: input.turns,
          usage: input.usage, toolCalls, createdAt: run.createdAt,
        });
        await tx.query('UPDATE threads SET active_run_id = NULL WHERE id = $1 AND active_run_id = $2', [run.threadId, run.id]);
        // A run that ended while calls waited (cancelled, failed) leaves nothing for a reviewer to decide.
        await cancelPendingApprovals(tx, run.id);
        await appendEvent(tx, run.id, input.eventSeq, 'run_ended', { status: input.status, stopReason: input.stopReason, error: input.error });
        summary = {
          runId: run.id, threadId: run.threadId, agentId: run.agentId, status: input.status, stopReason: input.stopReason,
          error: input.error, turns: input.turns, usage: input.usage, output: text, startTime: new Date(run.createdAt),
        };
      });
      // Once, after the commit: a retried finishRun found the result written and emits nothing.
      if (summary) emitRunSpan(summary);
      logger.info({ runId: input.runId, status: input.status, stopReason: input.stopReason, turns: input.turns }, 'run finished');
    },
  };
}
