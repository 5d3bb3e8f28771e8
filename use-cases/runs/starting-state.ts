import { EngineError } from '../../core/engine-error';
import {
  checkForkTurn, lastEndedTurn, placeReplacements, replacedResultText, type ForkPoint, type ToolResultReplacement,
} from '../../core/fork';
import { SIZE_BOUNDS } from '../../core/integration';
import { utf8Length } from '../../core/truncated-text';
import type { Queryable } from '../../store/pool';
import { forkLine, resultBounds, stepAtTurn, transcriptOutline, type NewFork } from '../../store/runs/forks';
import type { RunRecord } from '../../store/runs/runs';

/*
 * The state a new run starts from when it goes on from another run's recorded state at the start
 * of one of its turns (a fork, docs/time-travel.md): its input, its conversation before that turn
 * (the original's, with the named tool results replaced), the turn its own turns are numbered
 * from, and the scripted provider's step cursor there. The rest of the original's state (the
 * thread's messages before the run, its data sources, the prompt prefix) is copied as recorded.
 */

/** Where the new run starts, and what it changes of the original's conversation before that. */
export interface StartingStateRequest {
  atTurn: number;
  /** in place of the original's input: only when starting at turn 1 */
  input?: string;
  /** earlier tool results, each of a call of a turn before atTurn */
  toolResults?: ToolResultReplacement[];
}

export interface StartingState {
  input: string;
  point: ForkPoint;
  replaced: NewFork['replaced'];
}

/**
 * Checks the request against the original's recorded turns (conflict for a turn it has not
 * reached; validation for a result that is not of an earlier turn, or too large for its
 * integration's maxResultBytes) and reads where the new run starts.
 */
export async function startingState(db: Queryable, original: RunRecord, req: StartingStateRequest): Promise<StartingState> {
  if (req.input !== undefined && req.atTurn !== 1) {
    const field = 'body.input';
    throw new EngineError('validation', `${field}: a new input replaces the original's only when forking at turn 1`, { field });
  }
  const outline = await transcriptOutline(db, original.id);
  checkForkTurn(req.atTurn, lastEndedTurn(outline));
  const placed = placeReplacements(req.toolResults ?? [], outline, req.atTurn);
  const line = await forkLine(db, original.id);
  const [step, bounds] = await Promise.all([stepAtTurn(db, line, req.atTurn), resultBounds(db, line, placed)]);
  placed.forEach((r, i) => {
    const bound = bounds.get(r.toolCallId) ?? SIZE_BOUNDS.maxResultBytes.default;
    if (utf8Length(r.content) <= bound) return;
    const field = `body.toolResults[${i}].content`;
    throw new EngineError('validation', `${field}: ${utf8Length(r.content)} bytes, over its integration's bound of ${bound} bytes `
      + '(maxResultBytes)', { field });
  });
  return {
    input: req.input ?? original.input,
    point: { turn: req.atTurn, step },
    replaced: placed.map((r) => ({
      turn: r.turn, slot: r.slot,
      message: { role: 'tool', toolCallId: r.toolCallId, name: r.name, content: replacedResultText(r.name, r.content, r.isError) },
    })),
  };
}
