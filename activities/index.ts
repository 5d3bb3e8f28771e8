import type { ActivityDeps } from './deps';
import { createCapabilitiesActivities } from './capabilities';
import { createDiscoveryActivities } from './discovery';
import { createFinishRunActivities } from './finish-run';
import { createLlmTurnActivities } from './llm-turn';
import { createMcpToolActivities } from './mcp-tool';
import { createPromptPrefixActivities } from './prompt-prefix';
import { createRetrievePromptActivities } from './retrieve-prompt';
import { createRetrieveResourceActivities } from './retrieve-resource';
import { createRunContextActivities } from './run-context';
import { createSourceQueryActivities } from './source-query';
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
    ...createRetrievePromptActivities(deps),
    ...createRetrieveResourceActivities(deps),
    ...createSourceQueryActivities(deps),
    ...createPromptPrefixActivities(deps),
    ...createFinishRunActivities(deps),
    ...createCapabilitiesActivities(deps),
  };
}
