import { proxyActivities } from '@temporalio/workflow';

/**
 * The engine's workflows plus one bare workflow for the benchmark: one activity that makes the
 * MCP call and nothing else, so that its latency shows Temporal's own cost.
 */
export * from '../../workflows';

export interface BenchActivities {
  benchEcho(input: { text: string }): Promise<string>;
}

const { benchEcho } = proxyActivities<BenchActivities>({ startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 1 } });

export async function bareMcpCallWorkflow(text: string): Promise<string> {
  return benchEcho({ text });
}
