import { LISTENED_BUCKETS, LISTENED_LOCK_KEYS } from '../migrations/041-events-when-listened';
import { TEXT_CHANNEL } from './turn-drafts';
import type { RunChange } from './run-changes';

/**
 * The PostgreSQL channel of each kind of run change (the triggers of migrations 5, 7 and 9):
 * `event`: an event that changes the run object (a turn or tool call ended, an approval, a question);
 * `progress`: one that does not (a step started: migration 9); `ended`: the run's result was written;
 * `input`: a run input (elicitation) was answered or closed; workers waiting for answers watch it;
 * `text`: pieces of turns' texts as the model writes them (turn-drafts.ts): its payload is the pieces;
 * `keys`: an API key was revoked or changed (migration 24): its payload is the key's id, not a run's.
 */
const CHANNEL_OF: Record<RunChange, string> = {
  event: 'engine_run_event',
  progress: 'engine_run_progress',
  ended: 'engine_run_ended',
  input: 'engine_run_input',
  text: TEXT_CHANNEL,
  keys: 'engine_key_change',
};

/** every kind of run change, in the order status() lists them */
export const RUN_CHANGES = Object.keys(CHANNEL_OF) as RunChange[];

const KIND_OF = new Map(RUN_CHANGES.map((kind) => [CHANNEL_OF[kind], kind]));

export function changeOfChannel(channel: string): RunChange | undefined {
  return KIND_OF.get(channel);
}

/** The kinds announced only while someone listens for them, and the first key of their locks. */
const LOCK_KEY_OF: Partial<Record<RunChange, number>> = LISTENED_LOCK_KEYS;

/**
 * `LISTEN engine_run_event`, … : one statement per kind. Step starts and the other run events are
 * announced only while someone listens for them (migration 41): listening for `progress` or
 * `event` holds the advisory locks that say so, every bucket of the kind's, taken before the
 * LISTEN (each waits for a writer that found nobody listening to commit) and let go of after the UNLISTEN.
 */
export function channelStatements(verb: 'LISTEN' | 'UNLISTEN', kinds: readonly RunChange[]): string[] {
  return kinds.flatMap((kind) => {
    const statement = `${verb} ${CHANNEL_OF[kind]}`;
    const key = LOCK_KEY_OF[kind];
    if (key === undefined) return [statement];
    const locks = (fn: string) => `SELECT ${fn}(${key}, b) FROM generate_series(0, ${LISTENED_BUCKETS - 1}) b`;
    return verb === 'LISTEN' ? [locks('pg_advisory_lock_shared'), statement] : [statement, locks('pg_advisory_unlock_shared')];
  });
}
