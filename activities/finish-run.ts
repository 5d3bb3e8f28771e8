import { ApplicationFailure } from '@temporalio/activity';
import type { RunError, RunStatus, StopReason } from '../core/run';
import type { LimitName } from '../core/run-limits';
import { runToFinish, writeRunEnd, type StoredOutcome } from '../store/runs/lifecycle';
import type { StoredRunMessage } from '../store/runs/transcript';
import { addUsage, type ChatMessage, type Usage } from '../core/messages';
import { emitRunSpan } from '../platform/tracing/run-trace';
import { secondsSince } from '../platform/metrics/worker-metrics';
import type { ActivityDeps } from './deps';

export interface FinishRunInput {
  runId: string;
  status: Exclude<RunStatus, 'running'>;
  stopReason: StopReason;
  error: RunError | null;
  turns: number;
  usage: Usage;
  eventSeq: number;
  /** with stopReason "budget": the limit that stopped the run */
  limitReached?: LimitName;
  /** the usage of the runs it started as sub-agents */
  childUsage?: Usage;
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

/** The last assistant text; `written`: the last one that says something (a budget stop after a turn of calls only). */
function finalText(transcript: StoredRunMessage[], written = false): string | null {
  for (let i = transcript.length - 1; i >= 0; i--) {
    const m = transcript[i].message;
    if (m.role === 'assistant' && (!written || m.content)) return m.content;
  }
  return null;
}

export function createFinishRunActivities({ db, logger, metrics }: ActivityDeps) {
  return {
    /**
     * Commits the run's messages to its thread and writes the write-once result: one read, then one
     * statement. Returns how the run ended when its result was written already, by an earlier
     * attempt or by a turn that answered while a cancel was on its way: the first result stands.
     */
    async finishRun(input: FinishRunInput): Promise<StoredOutcome | undefined> {
      const found = await runToFinish(db, input.runId);
      if (found.ended) return found.ended;
      const { run, transcript } = found;
      if (!run) throw ApplicationFailure.nonRetryable(`Run ${input.runId} does not exist`, 'RunNotFound');
      const text = input.status === 'completed' ? finalText(transcript, input.stopReason === 'budget') : null;
      const result = {
        runId: run.id, threadId: run.threadId, agentId: run.agentId, status: input.status, stopReason: input.stopReason,
        limitReached: input.limitReached ?? null,
        output: (input.stopReason === 'max_turns' || input.stopReason === 'budget') && !text ? null : text,
        error: input.error, turns: input.turns,
        usage: input.usage, usageWithChildren: addUsage(input.usage, input.childUsage),
        toolCalls: found.toolCalls.map(({ slot: _slot, ...call }) => call), createdAt: run.createdAt,
      };
      const ended = {
        status: input.status, stopReason: input.stopReason,
        ...(input.limitReached ? { limitReached: input.limitReached } : {}), error: input.error,
      };
      const written = await writeRunEnd(db, result, committableMessages(transcript), { seq: input.eventSeq, data: ended });
      // Once, after the commit: a retried finishRun found the result written and emits nothing.
      if (written) {
        emitRunSpan({
          runId: run.id, threadId: run.threadId, agentId: run.agentId, status: input.status, stopReason: input.stopReason,
          error: input.error, turns: input.turns, usage: input.usage, output: text, startTime: new Date(run.createdAt),
        });
        // Counted right after the commit (no await between); a reader woken by the commit may scrape just before.
        metrics?.runEnded({
          status: input.status, stopReason: input.stopReason, agent: found.agentName ?? 'unknown', seconds: secondsSince(run.createdAt),
        });
      }
      logger.info({ runId: input.runId, status: input.status, stopReason: input.stopReason, turns: input.turns }, 'run finished');
      return undefined;
    },
  };
}
