import { endedSeqOf } from '../../core/tool-call';
import { allocateEvents, allocateTurnEvents } from '../../workflows/event-numbers';

describe('event numbers allocated by the run workflow', () => {
  test('a block of numbers is taken from the counter, the first answered', () => {
    const state = { eventSeq: 5 };
    expect(allocateEvents(state, 3)).toBe(5);
    expect(allocateEvents(state, 1)).toBe(8);
    expect(state.eventSeq).toBe(9);
  });

  test('a turn without approvals: two numbers per call, in call order', () => {
    const state = { eventSeq: 3 };
    expect(allocateTurnEvents(state, [false, false, false])).toEqual({ requested: [0, 0, 0], callSeqs: [3, 5, 7], resolved: [0, 0, 0] });
    expect(state.eventSeq).toBe(9);
  });

  test('approval requests come first, then the calls that run at once, then those that wait (resolved, started, ended)', () => {
    const state = { eventSeq: 10 };
    const n = allocateTurnEvents(state, [false, true, false, true]);
    expect(n).toEqual({ requested: [0, 10, 0, 11], callSeqs: [12, 17, 14, 20], resolved: [0, 16, 0, 19] });
    expect(state.eventSeq).toBe(22);
    const used = [...n.requested, ...n.resolved, ...n.callSeqs, ...n.callSeqs.map((s) => s + 1)].filter((s) => s > 0);
    // Every number of the turn once, none skipped.
    expect(new Set(used).size).toBe(used.length);
    expect([...used].sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => 10 + i));
    const immediate = [n.callSeqs[0], n.callSeqs[2]];
    for (const r of [10, 11]) for (const s of immediate) expect(r).toBeLessThan(s);
    for (const waiting of [1, 3]) expect(n.resolved[waiting]).toBeGreaterThan(Math.max(...immediate) + 1);
  });

  test('a sub-agent\'s call takes four numbers: started, child started, child ended, ended', () => {
    const state = { eventSeq: 3 };
    const n = allocateTurnEvents(state, [false, false, false], [false, true, false]);
    expect(n.callSeqs).toEqual([3, 5, 9]);
    expect(state.eventSeq).toBe(11);
    expect(endedSeqOf({ eventSeq: 5, childEvents: true })).toBe(8);
    expect(endedSeqOf({ eventSeq: 3 })).toBe(4);
  });

  test('a caller tool\'s call takes three numbers: started, caller_tool_call, ended', () => {
    const state = { eventSeq: 3 };
    const n = allocateTurnEvents(state, [false, false, false], [], [true, false, true]);
    expect(n.callSeqs).toEqual([3, 6, 8]);
    expect(state.eventSeq).toBe(11);
    expect(endedSeqOf({ eventSeq: 3, callerEvents: true })).toBe(5);
  });
});
