import { ApplicationFailure } from '@temporalio/activity';
import { findAgent } from '../core/db/agents';
import { appendEvent, findRun, putRunMessage, putSnapshot } from '../core/db/run-store';
import type { ChatMessage } from '../core/messages';
import type { PromptPrefixResult, RunContext } from '../workflows/definitions';
import type { ActivityDeps } from './deps';

export const SNAPSHOT = { discovery: 'discovery', prefix: 'prefix' } as const;

export interface PrefixSnapshot {
  messages: ChatMessage[];
}

export function createRunContextActivities({ db }: ActivityDeps) {
  return {
    /** Loads the run by reference and records its input as the first transcript message. */
    async loadRunContext({ runId }: { runId: string }): Promise<RunContext> {
      const run = await findRun(db, runId);
      if (!run) throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, 'RunNotFound');
      const agent = await findAgent(db, run.agentId);
      if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${run.agentId} does not exist`, 'AgentNotFound');
      await putRunMessage(db, runId, 0, 0, { role: 'user', content: run.input });
      await appendEvent(db, runId, 1, 'run_started', { threadId: run.threadId, agentId: agent.id, agentName: agent.name });
      return {
        threadId: run.threadId,
        agentId: agent.id,
        maxTurns: agent.maxTurns,
        integrationIds: agent.integrationIds,
        hasDataSources: false,
      };
    },

    /** Builds the injected prefix once per run: the agent's instructions (and, later, conventional MCP prompts). */
    async buildPromptPrefix({ runId, agentId }: { runId: string; agentId: string; integrationIds: string[] }): Promise<PromptPrefixResult> {
      const agent = await findAgent(db, agentId);
      const messages: ChatMessage[] = agent?.instructions ? [{ role: 'system', content: agent.instructions }] : [];
      const bytes = await putSnapshot(db, runId, SNAPSHOT.prefix, { messages } satisfies PrefixSnapshot);
      return { messageCount: messages.length, bytes };
    },
  };
}
