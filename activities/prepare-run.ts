import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ToolAvailability } from '../core/contract/tool-call';
import { findAgent } from '../core/db/agents';
import { threadHasDataSources } from '../core/db/data-sources';
import { appendEvent, findRun, getSnapshotWithBytes, putRunMessage, putSnapshot } from '../core/db/run-store';
import type { ActivityDeps } from './deps';
import { discoverRun } from './discovery';
import { integrationsPrefix } from './prompt-prefix';
import { SNAPSHOT, type DiscoverySnapshot, type PrefixSnapshot } from './run-snapshots';

/** What the workflow keeps of its run for its whole life (and across continue-as-new). */
export interface RunContext {
  threadId: string;
  agentId: string;
  maxTurns: number;
}

export interface PreparedRun {
  context: RunContext;
  tools: ToolAvailability;
  /** integrations pinned to their own task queue, to be discovered by a worker polling it */
  pinned: { integrationId: string; taskQueue: string }[];
}

/** Discovery may connect to slow servers: a heartbeat says the worker is still alive meanwhile. */
const HEARTBEAT_EVERY_MS = 5_000;

export function createPrepareRunActivities(deps: ActivityDeps) {
  const { db, logger } = deps;
  return {
    /**
     * A run's start, in one step: load the run by reference, record its input as the first
     * transcript message, discover its integrations' capabilities, and build the prompt prefix
     * (the agent's instructions and the servers' conventional prompts). Discovery and the prefix
     * are snapshots: a retry reuses what an earlier attempt recorded, so every turn reads one text.
     */
    async prepareRun({ runId }: { runId: string }): Promise<PreparedRun> {
      const run = await findRun(db, runId);
      if (!run) throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, 'RunNotFound');
      const agent = await findAgent(db, run.agentId);
      if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${run.agentId} does not exist`, 'AgentNotFound');
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        await putRunMessage(db, runId, 0, 0, { role: 'user', content: run.input });
        const discovery = await discoverRun(deps, runId, agent.integrationIds);
        const prefix = await buildPrefix(runId, agent.instructions, agent.integrationIds, discovery.snapshot);
        // Written once complete, so that the event reads the same live and replayed.
        await appendEvent(db, runId, 1, 'run_started', { threadId: run.threadId, agentId: agent.id, agentName: agent.name, prefix });
        return {
          context: { threadId: run.threadId, agentId: agent.id, maxTurns: agent.maxTurns },
          tools: {
            mcpRoutes: discovery.mcpRoutes,
            integrationCount: discovery.integrationCount,
            ...(discovery.unauthorized.length > 0 ? { unauthorized: discovery.unauthorized } : {}),
            // Tables imported by earlier runs of the thread (by any agent) stay queryable.
            hasDataSources: await threadHasDataSources(db, run.threadId),
          },
          pinned: discovery.pinned,
        };
      } finally {
        clearInterval(heartbeat);
      }
    },
  };

  async function buildPrefix(runId: string, instructions: string | null, integrationIds: string[], discovery: DiscoverySnapshot) {
    const recorded = await getSnapshotWithBytes<PrefixSnapshot>(db, runId, SNAPSHOT.prefix);
    if (recorded) return { messageCount: recorded.data.messages.length, injectedPrompts: recorded.data.injectedPrompts, bytes: recorded.bytes };
    const { messages, injected } = await integrationsPrefix(deps, { instructions, integrationIds, discovered: discovery.integrations });
    const bytes = await putSnapshot(db, runId, SNAPSHOT.prefix, { messages, injectedPrompts: injected } satisfies PrefixSnapshot);
    if (integrationIds.length > 0) logger.info({ runId, injected, bytes }, `Injected ${injected} conventional prompts from MCP servers`);
    return { messageCount: messages.length, injectedPrompts: injected, bytes };
  }
}
