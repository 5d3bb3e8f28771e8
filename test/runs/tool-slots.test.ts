import { randomUUID } from 'node:crypto';
import { insertThread } from '../../store/threads/threads';
import { runTranscript } from '../../store/runs/transcript';
import { insertFixtureIntegration } from '../support/fixture-integration';
import { startEngine, type Engine } from '../support/engine';
import { waitFor, within } from '../support/wait';

/*
 * A tool call holds one of a worker's activity slots while it runs. Calls that hang must neither
 * starve the LLM turns of other runs (tool work has slots of its own: core/tool-call.ts
 * toolTaskQueue) nor, from one integration, take every tool slot (activities/tool-slots.ts).
 */

let engine: Engine;
beforeAll(async () => {
  engine = await startEngine('embedded');
});
afterAll(async () => {
  await engine?.close();
});

/** The tool messages of a run, as the LLM read them. */
async function toolResults(runId: string): Promise<string[]> {
  const messages = await runTranscript(engine.db, runId);
  return messages.flatMap(({ message }) => (message.role === 'tool' ? [message.content] : []));
}

/** How many of these runs have a call that began (reached its server); a call that waits its turn has not. */
async function callsBegun(runIds: string[]): Promise<number> {
  const { rows } = await engine.db.query<{ n: number }>(
    "SELECT count(DISTINCT run_id)::int AS n FROM run_events WHERE type = 'tool_call_started' AND run_id = ANY($1)", [runIds]);
  return rows[0].n;
}

test('105 calls that hang leave other runs their LLM turns and other integrations their tool slots', async () => {
  const hanging = await insertFixtureIntegration(engine.db);
  const other = await insertFixtureIntegration(engine.db);
  const { agent } = await engine.scriptedThread(
    [{ toolCalls: [{ name: `${hanging.name}__hang`, arguments: {} }] }, { text: 'never reached' }], { integrationIds: [hanging.id] },
  );
  const hangRuns: string[] = [];
  try {
    for (let i = 0; i < 105; i++) {
      const thread = await insertThread(engine.db, agent.id);
      hangRuns.push(await engine.start({ threadId: thread.id, input: `hang ${i}` }));
    }
    // Every worker slot LLM turns use would be taken by now if tool calls shared them.
    await waitFor(async () => (await callsBegun(hangRuns)) >= 10, 60_000, 'the hanging integration to run its calls');

    const toolless = await engine.scriptedThread([{ text: 'answered while 105 calls hang' }]);
    const plainRun = await engine.start({ threadId: toolless.threadId, input: 'hi' });
    const echoing = await engine.scriptedThread(
      [{ toolCalls: [{ name: `${other.name}__echo`, arguments: { text: 'still served' } }] }, { text: '{{tool_results}}' }], { integrationIds: [other.id] },
    );
    const echoRun = await engine.start({ threadId: echoing.threadId, input: 'echo' });
    const ended = await within(Promise.all([engine.result(plainRun), engine.result(echoRun)]), 30_000, 'still running after 30 s');
    if (typeof ended === 'string') throw new Error(`the other runs starved: ${ended}`);
    const [plain, echo] = ended;
    expect(plain).toMatchObject({ status: 'completed', output: 'answered while 105 calls hang' });
    expect(echo).toMatchObject({ status: 'completed', output: expect.stringContaining('still served') });

    // One integration holds at most its maxConcurrentCalls (default 10) of this worker's slots; the rest wait their turn.
    expect(await callsBegun(hangRuns)).toBe(10);
  } finally {
    await Promise.all(hangRuns.map((id) => engine.client.workflow.getHandle(id).cancel().catch(() => undefined)));
    await Promise.all(hangRuns.map((id) => engine.result(id).catch(() => undefined)));
  }
}, 240_000);

test('a call that waits its turn longer than its request may take reads why, and the call holding the slot answers', async () => {
  // One call at a time; a request may take 2 s, a call that keeps reporting progress 30 s.
  const busy = await insertFixtureIntegration(engine.db, { maxConcurrentCalls: 1, toolTimeoutMs: 2_000, maxTotalTimeoutMs: 30_000 });
  const runCalling = async (call: { name: string; arguments: Record<string, unknown> }) => {
    const { threadId } = await engine.scriptedThread([{ toolCalls: [call] }, { text: '{{tool_results}}' }], { integrationIds: [busy.id] });
    return engine.start({ threadId, input: `call ${randomUUID()}` });
  };
  const holder = await runCalling({ name: `${busy.name}__slow_progress`, arguments: { ms: 8_000 } });
  await waitFor(async () => (await callsBegun([holder])) === 1, 30_000, 'the first call to take the slot');
  const waiter = await runCalling({ name: `${busy.name}__echo`, arguments: { text: 'never run' } });

  expect(await engine.result(waiter)).toMatchObject({ status: 'completed' });
  expect(await toolResults(waiter)).toEqual([
    expect.stringMatching(new RegExp(`^MCP tool execution failed: timed out after \\d+ ms waiting for its turn: a worker runs at most 1 calls of integration ${busy.name} at once$`)),
  ]);
  expect(await engine.result(holder)).toMatchObject({ status: 'completed', output: 'done after 8000 ms' });
}, 120_000);
