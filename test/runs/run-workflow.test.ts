import { listEvents } from '../../store/runs/events';
import { runTranscript } from '../../store/runs/transcript';
import { threadMessages } from '../../store/threads/threads';
import { toolResultText } from '../../core/tool-texts';
import { startEngine, type DatabaseKind, type Engine } from '../support/engine';
import { waitFor } from '../support/wait';

describe.each<DatabaseKind>(['embedded', 'external'])('the run workflow on %s PostgreSQL', (database) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await startEngine(database);
  });
  afterAll(async () => {
    await engine.close();
  });

  test('a scripted 3-turn run completes, with its output and tool calls in run_results', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'lookup_weather', arguments: { city: 'Lyon' } }] },
      { toolCalls: [{ name: 'lookup_time', arguments: {} }, { name: 'lookup_date', arguments: {} }] },
      { text: 'Done. Results were: {{tool_results}}' },
    ]);
    const runId = await engine.start({ threadId, input: 'What is the weather?' });
    const result = await engine.result(runId);

    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', turns: 3, threadId, error: null });
    expect(result.toolCalls.map((c) => [c.turn, c.name, c.type, c.status])).toEqual([
      [1, 'lookup_weather', 'unknown', 'error'],
      [2, 'lookup_time', 'unknown', 'error'],
      [2, 'lookup_date', 'unknown', 'error'],
    ]);
    expect(result.output).toBe(`Done. Results were: ${toolResultText.unknownTool('lookup_time')}\n${toolResultText.unknownTool('lookup_date')}`);
    expect(result.usage.inputTokens).toBeGreaterThan(0);

    // The thread keeps the whole conversation, and the event log tells the story in order.
    const messages = await threadMessages(engine.db, threadId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'tool', 'assistant']);
    const events = await listEvents(engine.db, runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0].type).toBe('run_started');
    expect(events.at(-1)).toMatchObject({ type: 'run_ended', data: { status: 'completed' } });
    expect(events.filter((e) => e.type === 'turn_started')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'tool_call_ended')).toHaveLength(3);
  });

  test('an unknown tool gets the exact contract text, and the run continues', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'no_such_tool', arguments: { x: 1 } }] },
      { text: '{{tool_results}}' },
    ]);
    const result = await engine.result(await engine.start({ threadId, input: 'go' }));
    const expected = 'A tool with the name no_such_tool was not found. Only use tools that are available in your given list of tools.';
    expect(result.toolCalls[0]).toMatchObject({ name: 'no_such_tool', type: 'unknown', status: 'error', result: expected });
    expect(result).toMatchObject({ status: 'completed', stopReason: 'answer', output: expected, turns: 2 });
  });
});

describe('the run workflow', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await startEngine('embedded');
  });
  afterAll(async () => {
    await engine.close();
  });

  test('maxTurns stops a looping script with stopReason max_turns', async () => {
    const loop = Array.from({ length: 10 }, () => ({ toolCalls: [{ name: 'again', arguments: {} }] }));
    const { threadId } = await engine.scriptedThread(loop, { maxTurns: 3 });
    const result = await engine.result(await engine.start({ threadId, input: 'loop' }));
    expect(result).toMatchObject({ status: 'completed', stopReason: 'max_turns', turns: 3 });
    expect(result.toolCalls).toHaveLength(3);
  });

  test('a cancelled run ends cleanly with status cancelled, and its thread is free again', async () => {
    const { threadId } = await engine.scriptedThread([
      { toolCalls: [{ name: 'first', arguments: {} }] },
      { text: 'never', delayMs: 60_000 },
    ]);
    const runId = await engine.start({ threadId, input: 'slow' });
    const handle = engine.client.workflow.getHandle(runId);
    await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === 'turn_started' && e.data.turn === 2));
    await handle.cancel();
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', turns: 1 });
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    // Only whole turns reach the thread.
    expect((await threadMessages(engine.db, threadId)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    const next = await engine.start({ threadId, input: 'again' });
    expect(next).not.toBe(runId);
    await engine.client.workflow.getHandle(next).cancel();
    expect((await engine.result(next)).status).toBe('cancelled');
  });

  test('a cancel that arrives while the last turn answers ends the run; the answer written after it ends nothing', async () => {
    // The turn learns of a cancel at its first heartbeat (5 s), after this answer is written.
    const { threadId } = await engine.scriptedThread([{ toolCalls: [{ name: 'first', arguments: {} }] }, { text: 'too late', delayMs: 2_000 }]);
    const runId = await engine.start({ threadId, input: 'cancel while it answers' });
    const handle = engine.client.workflow.getHandle(runId);
    await waitFor(async () => (await listEvents(engine.db, runId)).some((e) => e.type === 'turn_started' && e.data.turn === 2));
    await handle.cancel();
    expect(await engine.result(runId)).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', output: null, turns: 1 });
    await waitFor(async () => (await runTranscript(engine.db, runId)).some((m) => m.turn === 2), 10_000, 'the late answer');
    expect(await engine.result(runId)).toMatchObject({ status: 'cancelled', turns: 1 });
    const described = await handle.describe();
    expect(described.status.name).toBe('CANCELLED');
    expect(described.searchAttributes.RunStatus).toEqual(['cancelled']);
    expect((await listEvents(engine.db, runId)).filter((e) => e.type === 'run_ended').map((e) => e.data))
      .toEqual([{ status: 'cancelled', stopReason: 'cancelled', error: null }]);
    expect((await threadMessages(engine.db, threadId)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  test('a forced continue-as-new keeps the same run id and finishes correctly', async () => {
    const script = [
      ...Array.from({ length: 4 }, (_, i) => ({ toolCalls: [{ name: `step_${i + 1}`, arguments: {} }] })),
      { text: 'finished after {{tool_results}}' },
    ];
    const { threadId } = await engine.scriptedThread(script);
    const runId = await engine.start({ threadId, input: 'long', continueAsNewAtHistoryBytes: 1 });
    const result = await engine.result(runId);
    expect(result).toMatchObject({ runId, status: 'completed', stopReason: 'answer', turns: 5 });
    expect(result.output).toBe(`finished after ${toolResultText.unknownTool('step_4')}`);
    expect(result.toolCalls.map((c) => c.name)).toEqual(['step_1', 'step_2', 'step_3', 'step_4']);

    // Several executions, one workflow id: the first run of the chain continued as new.
    const executions = [];
    for await (const e of engine.client.workflow.list({ query: `WorkflowId = '${runId}'` })) executions.push(e);
    expect(executions.length).toBeGreaterThan(1);
    expect(executions.filter((e) => e.status.name === 'CONTINUED_AS_NEW')).toHaveLength(executions.length - 1);
    const events = await listEvents(engine.db, runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect((await runTranscript(engine.db, runId)).length).toBe(1 + 5 + 4);
  });
});
