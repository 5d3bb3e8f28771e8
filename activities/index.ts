import { createApprovalActivities } from './approvals';
import { createBudgetRequestActivities } from './budget-requests';
import { createCallerToolActivities } from './caller-tool-result';
import type { ActivityDeps } from './deps';
import { createDiscoveryActivities } from './discovery';
import { createEvalActivities } from './evals';
import { createFinishRunActivities } from './finish-run';
import { createInputRoundActivities } from './input-rounds';
import { createLlmTurnActivities } from './llm-turn';
import { createOAuthActivities } from './oauth';
import { createPrepareRunActivities } from './prepare-run';
import { createPromptPrefixActivities } from './prompt-prefix';
import { createRecordedResultActivities } from './recorded-results';
import { createSamplingActivities } from './sampling';
import { createSubAgentActivities } from './sub-agent-result';
import { createMcpTaskActivities } from './tools/mcp-task-polls';
import { createTaskLiveQuestionActivities } from './tools/task-live-questions';
import { createToolCallActivities } from './tool-call';
import { toolHandlers } from './tools';

export type { ActivityDeps } from './deps';

/** Every activity of the engine, closed over the worker's dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createPrepareRunActivities(deps),
    ...createDiscoveryActivities(deps),
    ...createLlmTurnActivities(deps),
    ...createToolCallActivities(deps, toolHandlers),
    ...createRecordedResultActivities(deps, Object.values(toolHandlers)),
    ...createPromptPrefixActivities(deps),
    ...createApprovalActivities(deps),
    ...createBudgetRequestActivities(deps),
    ...createInputRoundActivities(deps),
    ...createSamplingActivities(deps),
    ...createMcpTaskActivities(deps),
    ...createTaskLiveQuestionActivities(deps),
    ...createSubAgentActivities(deps),
    ...createCallerToolActivities(deps),
    ...createFinishRunActivities(deps),
    ...createOAuthActivities(deps),
    ...createEvalActivities(deps),
  };
}
