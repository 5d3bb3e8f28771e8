import { temporal } from '@temporalio/proto';
import { startEngine, type Engine } from '../support/engine';

/** History bytes after each LLM turn completes (the first runs in prepareRun), measured on the encoded events. */
function bytesPerTurn(history: temporal.api.history.v1.IHistory): number[] {
  const scheduled = new Map<string, string>();
  const marks: number[] = [];
  let total = 0;
  for (const event of history.events ?? []) {
    total += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    const attrs = event.activityTaskScheduledEventAttributes;
    if (attrs) scheduled.set(String(event.eventId), attrs.activityType?.name ?? '');
    const done = event.activityTaskCompletedEventAttributes;
    if (done && ['prepareRun', 'llmTurn'].includes(scheduled.get(String(done.scheduledEventId)) ?? '')) marks.push(total);
  }
  return marks;
}

describe('history discipline', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await startEngine('embedded');
  });
  afterAll(async () => {
    await engine.close();
  });

  test('history bytes of a 50-turn scripted run grow linearly and stay small', async () => {
    // Each turn calls a tool with a large argument and gets a large result: neither may enter history.
    const big = 'x'.repeat(20_000);
    const steps = Array.from({ length: 49 }, (_, i) => ({ toolCalls: [{ name: `tool_${i}`, arguments: { payload: big } }], text: big }));
    const { threadId } = await engine.scriptedThread([...steps, { text: 'end' }], { maxTurns: 60 });
    const runId = await engine.start({ threadId, input: big });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', turns: 50 });

    const history = await engine.client.workflow.getHandle(runId).fetchHistory();
    const marks = bytesPerTurn(history);
    expect(marks).toHaveLength(50);
    const deltas = marks.slice(1).map((m, i) => m - marks[i]);
    const steady = deltas.slice(1, -1); // the last turn answers instead of calling a tool
    // Linear: every turn adds about the same bytes; the text preview is capped at 2 KB.
    expect(Math.max(...steady)).toBeLessThan(Math.min(...steady) * 1.25);
    expect(Math.max(...steady)).toBeLessThan(6_000);
    const total = temporal.api.history.v1.History.encode(history).finish().length;
    expect(total).toBeLessThan(400_000); // ~2 MB for 200 turns is the goal
    process.stdout.write(`history: ${total} bytes for 50 turns, ${Math.round(steady.reduce((a, b) => a + b, 0) / steady.length)} bytes per turn\n`);
  });
});
