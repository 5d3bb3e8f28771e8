import type { ActivityDeps } from './deps';
import { createDiscoveryActivities } from './discovery';
import { createFinishRunActivities } from './finish-run';
import { createLlmTurnActivities } from './llm-turn';
import { createMcpToolActivities } from './mcp-tool';
import { createRunContextActivities } from './run-context';
import { createToolResultActivities } from './tool-results';

export type { ActivityDeps } from './deps';

/** Every activity of the engine, closed over the worker's dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createRunContextActivities(deps),
    ...createDiscoveryActivities(deps),
    ...createLlmTurnActivities(deps),
    ...createToolResultActivities(deps),
    ...createMcpToolActivities(deps),
    ...createFinishRunActivities(deps),
  };
}
