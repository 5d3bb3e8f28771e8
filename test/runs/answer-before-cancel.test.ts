import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { FinishRunInput } from '../../activities/finish-run';
import type { PreparedRun } from '../../activities/prepare-run';
import type { LlmTurnOutput } from '../../activities/llm-turn';
import { RUN_WORKFLOW_TYPE, type RunOutcome } from '../../core/run';
import { quietRuntime } from '../support/engine';
import { testStack } from '../support/stack-env';

/**
 * The run workflow with its activities faked at the Worker: a race the real activities cannot be
 * made to lose on purpose. A turn that answers writes the run's result itself; when the workflow
 * sees a cancel first, the finish it then asks for finds that result, and the run ended with it.
 */
describe('a run whose last turn answered before the workflow saw a cancel', () => {
  let connection: Connection;
  let nativeConnection: NativeConnection;

  beforeAll(async () => {
    quietRuntime();
    connection = await Connection.connect({ address: testStack().temporalAddress });
    nativeConnection = await NativeConnection.connect({ address: testStack().temporalAddress });
  });
  afterAll(async () => {
    await nativeConnection?.close();
    await connection?.close();
  });

  test('ends completed with the stored answer, in its outcome, its RunStatus and Temporal alike', async () => {
    const client = new Client({ connection });
    const taskQueue = `answer-race-${randomUUID()}`;
    const runId = `run_race_${randomUUID().replace(/-/g, '')}`;
    const finishes: FinishRunInput[] = [];
    const answered = { inputTokens: 3, outputTokens: 4 };
    const worker = await Worker.create({
      connection: nativeConnection, taskQueue, workflowBundle: { codePath: testStack().workflowBundlePath },
      activities: {
        // No first turn here, as when pinned integrations must be discovered first.
        prepareRun: async (): Promise<PreparedRun> => ({
          context: { threadId: 'thr_race', agentId: 'agt_race', maxTurns: 5 },
          tools: { mcpRoutes: {}, integrationCount: 0, hasDataSources: false },
          pinned: [],
        }),
        // The answer is "written" while the cancel is on its way to the workflow, which sees the cancel first.
        llmTurn: async (): Promise<LlmTurnOutput> => {
          await client.workflow.getHandle(runId).cancel();
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          return { toolCalls: [], textPreview: 'the answer', textBytes: 10, usage: answered };
        },
        finishRun: async (input: FinishRunInput) => {
          finishes.push(input);
          return { status: 'completed', stopReason: 'answer', error: null, turns: 1, usage: answered };
        },
      },
    });
    const running = worker.run();
    try {
      const handle = await client.workflow.start(RUN_WORKFLOW_TYPE, { taskQueue, workflowId: runId, args: [{ runId }] });
      const outcome = await handle.result() as RunOutcome;
      expect(finishes.map((f) => [f.status, f.eventSeq])).toEqual([['cancelled', 4]]);
      expect(outcome).toMatchObject({ status: 'completed', stopReason: 'answer', turns: 1, usage: answered, error: null });
      const described = await handle.describe();
      expect(described.status.name).toBe('COMPLETED');
      expect(described.searchAttributes.RunStatus).toEqual(['completed']);
    } finally {
      worker.shutdown();
      await running;
    }
  });
});
