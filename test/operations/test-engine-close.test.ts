import { randomUUID } from 'node:crypto';
import { startEngine } from '../support/engine';

/**
 * The test engine's close() leaves no Temporal call in flight: grpc-js ends the channel but not the
 * calls on it, and a long poll still running (here a workflow's result(), which nobody will
 * complete) would hold its socket for the server's 20 s poll, past the file's end, where the test
 * environment reports it as a leaked handle.
 */
test('closing the test engine cancels a long poll still in flight', async () => {
  const engine = await startEngine('embedded', { worker: false });
  const handle = await engine.client.workflow.start('noWorkerRunsThis', {
    taskQueue: `nobody-${randomUUID()}`, workflowId: `close-test-${randomUUID()}`, args: [], workflowExecutionTimeout: '1 minute',
  });
  const outcome = handle.result().then(() => 'completed', (err: Error) => `failed: ${err.message} ${String(err.cause ?? '')}`);
  // Long enough for the poll to reach the server.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const closing = Date.now();
  await engine.close();
  const ended = await outcome;
  expect(ended).toMatch(/^failed: /);
  // Ended by the close, not by the server's poll timeout (which would be 20 s later).
  expect(Date.now() - closing).toBeLessThan(10_000);
});
