import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { runStatusKey } from '../../core/search-attributes';

/**
 * The engine's workflows plus the benchmarks' bare workflows:
 * - one activity that makes the MCP call and nothing else, so that its latency shows Temporal's own cost;
 * - the floor: the least a Temporal program can do for a run's shape. Per turn an "LLM" activity
 *   returns the tool calls, which run as parallel activities making the MCP call; a final "LLM"
 *   activity ends the run. No database, no bookkeeping; the same search attributes as a run's
 *   (set at its start, floorSearchAttributes in load-engine.ts, and its status upserted at its end),
 *   so that the Temporal server lists both alike.
 */
export * from '../../workflows';

export interface BenchActivities {
  benchEcho(input: { text: string }): Promise<string>;
  /** `script[t]` is how many tool calls turn t+1 makes; a turn past the script makes none (the answer) */
  floorLlmTurn(input: { script: number[]; turn: number; text: string }): Promise<{ toolCalls: { name: string; arguments: { text: string } }[] }>;
}

const { benchEcho, floorLlmTurn } = proxyActivities<BenchActivities>({ startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 1 } });

export async function bareMcpCallWorkflow(text: string): Promise<string> {
  return benchEcho({ text });
}

/** Returns the echoed results of every turn, so that the caller can check the run did the work. */
export async function floorRunWorkflow(input: { script: number[]; text: string }): Promise<string[]> {
  const results: string[] = [];
  for (let turn = 1; ; turn++) {
    const { toolCalls } = await floorLlmTurn({ script: input.script, turn, text: input.text });
    if (toolCalls.length === 0) {
      upsertSearchAttributes([{ key: runStatusKey, value: 'completed' }]);
      return results;
    }
    results.push(...(await Promise.all(toolCalls.map((call) => benchEcho(call.arguments)))));
  }
}
