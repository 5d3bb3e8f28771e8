import { ApplicationFailure } from '@temporalio/activity';
import { findAgent } from '../core/db/agents';
import { threadHasDataSources } from '../core/db/data-sources';
import {
  appendEvent, findRun, getSnapshot, getSnapshotWithBytes, mergeEventData, putRunMessage, putSnapshot,
} from '../core/db/run-store';
import type { ChatMessage } from '../core/messages';
import type { PromptPrefixResult, RunContext } from '../workflows/definitions';
import type { ActivityDeps } from './deps';
import type { DiscoverySnapshot } from './discovery';
import { integrationsPrefix } from './prompt-prefix';

export const SNAPSHOT = { discovery: 'discovery', prefix: 'prefix' } as const;

export interface PrefixSnapshot {
  messages: ChatMessage[];
}

export function createRunContextActivities(deps: ActivityDeps) {
  const { db, logger } = deps;
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
        // Tables imported by earlier runs of the thread (by any agent) stay queryable.
        hasDataSources: await threadHasDataSources(db, run.threadId),
      };
    },

    /**
     * Builds the injected prefix once per run: the agent's instructions and the conventional MCP
     * prompts of its integrations. It is recorded in run_snapshots, and every LLM turn reads that
     * record, so the prompts are fetched once per run and a retry or replay never sees other text.
     */
    async buildPromptPrefix({ runId, agentId, integrationIds }: { runId: string; agentId: string; integrationIds: string[] }): Promise<PromptPrefixResult> {
      const recorded = await getSnapshotWithBytes<PrefixSnapshot>(db, runId, SNAPSHOT.prefix);
      if (recorded) return { messageCount: recorded.data.messages.length, bytes: recorded.bytes };
      const agent = await findAgent(db, agentId);
      const discovery = await getSnapshot<DiscoverySnapshot>(db, runId, SNAPSHOT.discovery);
      const { messages, injected, failed } = await integrationsPrefix(deps, {
        instructions: agent?.instructions ?? null, integrationIds, discovered: discovery?.integrations,
      });
      const bytes = await putSnapshot(db, runId, SNAPSHOT.prefix, { messages } satisfies PrefixSnapshot);
      // The prefix is part of the run's size: the event log shows it next to the run's start.
      await mergeEventData(db, runId, 1, { prefix: { messageCount: messages.length, injectedPrompts: injected, bytes } });
      if (integrationIds.length > 0) {
        logger.info({ runId, injected, failed: failed.length, bytes }, `Injected ${injected} conventional prompts from MCP servers`);
      }
      return { messageCount: messages.length, bytes };
    },
  };
}
