import { EngineError } from './engine-error';
import { nativeToolKind } from './native-tool-kinds';
import { SUB_AGENT_TOOL_PREFIX, subAgentText } from './sub-agents';
import { toolResultText } from './tool-texts';

/**
 * Forking a run (POST /v1/runs/:id/fork, docs/time-travel.md): a new run on a new thread that
 * starts from another run's recorded state at the start of one of its turns. Pure: the rules the
 * API checks a fork by, and the texts a replaced tool result becomes. The workflow reads ForkPoint.
 */

/** The run and the turn a run or a thread was forked from (the run object's and the thread's `forkedFrom`). */
export interface ForkedFrom {
  runId: string;
  turn: number;
}

/**
 * Where a fork's workflow starts: its first turn's number (the original's turn it was forked at:
 * a fork's turns go on from there) and the scripted provider's step cursor at that turn.
 */
export interface ForkPoint {
  turn: number;
  step: number;
}

/** How many earlier tool results one fork may replace. */
export const MAX_REPLACED_TOOL_RESULTS = 256;

/** An earlier tool result the fork's conversation has in place of the original's. */
export interface ToolResultReplacement {
  toolCallId: string;
  content: string;
  isError?: boolean;
}

/** One turn of a run's transcript in outline: its reply's tool calls and how many of their results are stored. */
export interface TurnOutline {
  turn: number;
  calls: { id: string; name: string }[];
  results: number;
}

/**
 * The last turn that has ended: its reply and every result of its calls are stored, as for each
 * turn before it. 0 when none has (the run's input is all there is).
 */
export function lastEndedTurn(outline: TurnOutline[]): number {
  let ended = 0;
  for (const t of [...outline].sort((a, b) => a.turn - b.turn)) {
    if (t.turn !== ended + 1 || t.results < t.calls.length) break;
    ended = t.turn;
  }
  return ended;
}

/** A fork starts at the start of a turn that the original has reached: from 1 to its last ended turn + 1 (conflict otherwise). */
export function checkForkTurn(atTurn: number, lastEnded: number): void {
  if (atTurn >= 1 && atTurn <= lastEnded + 1) return;
  throw new EngineError('conflict', `body.atTurn: ${atTurn} is not a turn to fork at: the run's last ended turn is ${lastEnded}, `
    + `so atTurn goes from 1 to ${lastEnded + 1}`, { field: 'body.atTurn' });
}

/** A replaced result's place in the conversation: the turn of its call, the slot of its result, the tool's name. */
export interface ReplacedResult extends ToolResultReplacement {
  turn: number;
  slot: number;
  name: string;
}

/**
 * Each replaced result must answer a call of a turn before `atTurn`, once: validation naming
 * `body.toolResults[i].toolCallId` otherwise. Returns where each goes.
 */
export function placeReplacements(replacements: ToolResultReplacement[], outline: TurnOutline[], atTurn: number): ReplacedResult[] {
  const seen = new Set<string>();
  return replacements.map((r, i) => {
    const field = `body.toolResults[${i}].toolCallId`;
    const turn = outline.find((t) => t.turn < atTurn && t.calls.some((c) => c.id === r.toolCallId));
    if (!turn) {
      throw new EngineError('validation', `${field}: ${r.toolCallId} is not a tool call of a turn before turn ${atTurn}`, { field });
    }
    if (seen.has(r.toolCallId)) throw new EngineError('validation', `${field}: ${r.toolCallId} is replaced twice`, { field });
    seen.add(r.toolCallId);
    const index = turn.calls.findIndex((c) => c.id === r.toolCallId);
    return { ...r, turn: turn.turn, slot: index + 1, name: turn.calls[index].name };
  });
}

/**
 * What the LLM reads of a replaced result: its content; with isError, the failure text the tool's
 * kind gives a failed call (docs/tools.md), with the content as the failure's message.
 */
export function replacedResultText(name: string, content: string, isError = false): string {
  if (!isError) return content;
  const native = nativeToolKind(name);
  if (native) return native.failureText(content);
  if (name.startsWith(SUB_AGENT_TOOL_PREFIX)) return subAgentText.failed(name.slice(SUB_AGENT_TOOL_PREFIX.length), content);
  return toolResultText.mcpToolFailed(content);
}
