import { matchRecordedCalls, notRecordedText, type RecordedCall, type ReplayedCall } from '../core/replay';
import type { ToolOutcome } from '../core/tool-call';
import { utf8Length } from '../core/truncated-text';
import { callsToMatch, recordedResult, type RecordedResult } from '../store/runs/replays';
import { findToolCallAndRequest, type ToolCallRecord } from '../store/runs/tool-calls';
import type { ActivityDeps } from './deps';
import { storedOutcome, storeToolResult } from './tool-call';
import type { AnyToolHandler, ToolActivityInput } from './tool-handler';

/*
 * A replay's tool calls answered from its original's recording (docs/time-travel.md): which
 * recorded result each call of a turn takes, and the call's answer, stored as any call's is. Both
 * are the workflow's local activities, short reads and writes of our own database; nothing outside
 * the engine is asked. The workflow carries the original calls' places only, never their results.
 */

export interface MatchRecordedInput {
  runId: string;
  turn: number;
  /** the run the replay replays */
  originalRunId: string;
  /** the turn's calls a recorded result may answer (those of a kind that runs an activity), by index */
  indexes: number[];
}

export interface AnswerFromRecordingInput extends ToolActivityInput {
  originalRunId: string;
  replayed: ReplayedCall;
}

/** The original's call as a stored call record, for the handlers that restore an outcome from one (an imported CSV). */
const asRecord = (ref: ToolActivityInput, recorded: RecordedResult): ToolCallRecord => ({
  id: ref.toolCallId, turn: ref.turn, slot: ref.index + 1, name: ref.name, type: recorded.type, integrationId: recorded.integrationId,
  status: recorded.status, durationMs: 0, result: recorded.preview, resultBytes: utf8Length(recorded.content),
});

export function createRecordedResultActivities(deps: ActivityDeps, handlers: AnyToolHandler[]) {
  return {
    /**
     * The recorded result each of the turn's calls at `indexes` takes, in that order (null: the
     * original made no such call, or each like it is taken already). A read that leaves out what
     * earlier turns took: made again (its marker lost with a worker), it finds the same, whichever
     * of the turn's calls were answered meanwhile.
     */
    async matchRecordedCalls(input: MatchRecordedInput): Promise<{ recorded: (RecordedCall | null)[] }> {
      const { calls, originals } = await callsToMatch(deps.db, input);
      const asked = input.indexes.map((i) => calls[i] ?? { name: '', arguments: {} });
      return { recorded: matchRecordedCalls(asked, originals) };
    },

    /**
     * A replay's call answered from the recording: the original's result whole, with its status
     * (and an imported CSV says so, as the original's did), or the text saying none was recorded.
     * A call answered already keeps its answer.
     */
    async answerFromRecording(input: AnswerFromRecordingInput): Promise<ToolOutcome> {
      const { originalRunId, replayed, route: _route, ...ref } = input;
      const { stored } = await findToolCallAndRequest(deps.db, ref.runId, ref.turn, ref.index + 1);
      if (stored) return storedOutcome(stored, handlers);
      const recorded = replayed.recorded ? await recordedResult(deps.db, originalRunId, replayed.recorded) : undefined;
      if (!recorded || !replayed.recorded) {
        const content = notRecordedText(ref.name, originalRunId);
        return storeToolResult(deps.db, ref, { status: 'error', content, durationMs: 0, replayed: 'not_recorded' });
      }
      const { status, content } = recorded;
      await storeToolResult(deps.db, ref, {
        status, content, durationMs: 0, ...(recorded.integrationId ? { integrationId: recorded.integrationId } : {}),
        replayed: 'recorded', recordedFrom: replayed.recorded,
      });
      return storedOutcome(asRecord(input, recorded), handlers);
    },
  };
}
