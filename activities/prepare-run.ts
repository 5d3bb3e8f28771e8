import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ToolAvailability } from '../core/contract/tool-call';
import { runToPrepare } from '../core/db/run-lifecycle';
import { eventWrite, runMessageWrite, snapshotWrite, writeTogether, type Write } from '../core/db/run-store';
import type { ActivityDeps } from './deps';
import { discoverRun } from './discovery';
import { integrationsPrefix } from './prompt-prefix';
import { SNAPSHOT, type PrefixSnapshot } from './run-snapshots';

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
     * are snapshots: a retry reuses the prefix an earlier attempt recorded, so every turn reads one
     * text. One read and two writes: the input with the discovery, then the prefix with run_started.
     */
    async prepareRun({ runId }: { runId: string }): Promise<PreparedRun> {
      const { run, agent, hasDataSources, prefix: recorded } = await runToPrepare(db, runId, SNAPSHOT.prefix);
      if (!run) throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, 'RunNotFound');
      if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${run.agentId} does not exist`, 'AgentNotFound');
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const discovery = await discoverRun(deps, runId, agent.integrationIds);
        await writeTogether(db, [
          runMessageWrite(runId, 0, 0, { role: 'user', content: run.input }),
          snapshotWrite(runId, SNAPSHOT.discovery, discovery.snapshot),
        ]);
        let prefix: { messageCount: number; injectedPrompts: number; bytes: number };
        const writes: Write[] = [];
        if (recorded) {
          const data = recorded.data as PrefixSnapshot;
          prefix = { messageCount: data.messages.length, injectedPrompts: data.injectedPrompts, bytes: recorded.bytes };
        } else {
          const { messages, injected } = await integrationsPrefix(deps, {
            instructions: agent.instructions, integrationIds: agent.integrationIds, integrations: discovery.integrations, discovered: discovery.snapshot.integrations,
          });
          const write = snapshotWrite(runId, SNAPSHOT.prefix, { messages, injectedPrompts: injected } satisfies PrefixSnapshot);
          writes.push(write);
          prefix = { messageCount: messages.length, injectedPrompts: injected, bytes: write.bytes };
          if (agent.integrationIds.length > 0) logger.info({ runId, injected, bytes: write.bytes }, `Injected ${injected} conventional prompts from MCP servers`);
        }
        // Written once complete, so that the event reads the same live and replayed.
        writes.push(eventWrite(runId, 1, 'run_started', { threadId: run.threadId, agentId: agent.id, agentName: agent.name, prefix }));
        await writeTogether(db, writes);
        return {
          context: { threadId: run.threadId, agentId: agent.id, maxTurns: agent.maxTurns },
          tools: {
            mcpRoutes: discovery.mcpRoutes,
            integrationCount: discovery.integrationCount,
            ...(discovery.unauthorized.length > 0 ? { unauthorized: discovery.unauthorized } : {}),
            // Tables imported by earlier runs of the thread (by any agent) stay queryable.
            hasDataSources,
          },
          pinned: discovery.pinned,
        };
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}
