import { ApplicationFailure } from '@temporalio/activity';
import type { Agent } from '../core/agent';
import type { Integration } from '../core/integration';
import { takesRecordedResults, type ReplayOf } from '../core/replay';
import type { SubAgentRoute } from '../core/sub-agents';
import { withInstructions } from '../mcp-client/prefix-instructions';
import { findIntegrations } from '../store/integrations/integrations';
import { replayedDataSources } from '../store/data-sources';
import { recordedSnapshots } from '../store/runs/replays';
import { copyThreadSources } from '../sources/csv/thread-copies';
import type { ActivityDeps } from './deps';
import { recordedDiscovery, type RunDiscovery } from './discovery';
import { SNAPSHOT, type DiscoverySnapshot, type PrefixSnapshot } from './run-snapshots';

/**
 * What a replay's preparation takes from its original (docs/time-travel.md). The replay runs on
 * its agent's instructions and model, with the original's tools: its integrations, sub-agents and
 * caller tools.
 * Its thread starts with the tables its original's thread had when the original began, copied.
 * A replay that takes recorded results takes them as recorded, asking no server: the discovery,
 * the prompt prefix's servers' prompts (with the agent's instructions in it), the sub-agents, and
 * whether its thread had data sources. A "live" replay discovers the same integrations again.
 */
export interface ReplayPreparation {
  /** the replay's agent with the original's integrations and sub-agents */
  agent: Agent;
  /** the original's integrations, as they are now */
  integrations: Integration[];
  /** how many data sources the replay's thread has: those its original's thread had when the original began, copied */
  copiedSources: number;
  /** the caller tools the original declared, by name (store/runs/replays.ts copied their declarations) */
  callerTools?: string[];
  recorded?: {
    discovery: RunDiscovery;
    prefix: PrefixSnapshot;
    subAgents?: Record<string, SubAgentRoute>;
    hasDataSources: boolean;
  };
}

/** What a replay reads of its original's prepared snapshot (prepare-run.ts PreparedRun). */
type RecordedTools = { tools: { subAgents?: Record<string, SubAgentRoute>; hasDataSources: boolean; callerTools?: string[] } };

export async function replayPreparation(
  deps: ActivityDeps, run: { id: string; replayOf: ReplayOf }, agent: Agent,
): Promise<ReplayPreparation> {
  const { replayOf } = run;
  const snapshots = await recordedSnapshots(deps.db, replayOf.runId, [SNAPSHOT.discovery, SNAPSHOT.prefix, SNAPSHOT.prepared]);
  const discovery = snapshots[SNAPSHOT.discovery]?.data as DiscoverySnapshot | undefined;
  const prefix = snapshots[SNAPSHOT.prefix]?.data as PrefixSnapshot | undefined;
  const prepared = snapshots[SNAPSHOT.prepared]?.data as RecordedTools | undefined;
  // The API checked it before the replay was recorded; a run's snapshots are never taken away.
  if (!discovery || !prefix || !prepared) {
    throw ApplicationFailure.nonRetryable(`Run ${replayOf.runId} has no recorded preparation to replay`, 'ReplayUnavailable');
  }
  const integrationIds = discovery.integrations.map((i) => i.id);
  const subAgents = prepared.tools.subAgents;
  const integrations = await findIntegrations(deps.db, integrationIds);
  const runAgent = { ...agent, integrationIds, subAgents: Object.values(subAgents ?? {}).map((r) => r.agentId) };
  const original = await replayedDataSources(deps.db, run.id);
  const copiedSources = await copyThreadSources(deps.db, original.threadId, original.sources);
  const callerTools = prepared.tools.callerTools;
  const common = { agent: runAgent, integrations, copiedSources, ...(callerTools ? { callerTools } : {}) };
  if (!takesRecordedResults(replayOf)) return common;
  return {
    ...common,
    recorded: {
      discovery: recordedDiscovery(discovery, integrations),
      prefix: {
        messages: withInstructions(prefix.messages, agent.instructions, prefix.instructions),
        injectedPrompts: prefix.injectedPrompts, instructions: agent.instructions,
      },
      ...(subAgents ? { subAgents } : {}),
      hasDataSources: prepared.tools.hasDataSources,
    },
  };
}
