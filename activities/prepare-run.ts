import { MAX_SUB_AGENT_DEPTH, subAgentToolName, type SubAgentRoute } from '../core/sub-agents';
import { subAgentsByIds } from '../store/sub-agents';
import { effectiveLimits, type EffectiveLimits, type RunLimits } from '../core/run-limits';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { type ToolAvailability } from '../core/tool-call';
import { offeredNativeTools } from '../core/native-tool-kinds';
import type { Agent } from '../core/agent';
import { runToPrepare } from '../store/runs/lifecycle';
import { snapshotWrite } from '../store/runs/snapshots';
import { eventWrite } from '../store/runs/events';
import { runVersionWrite, turnAttemptWrite } from '../store/runs/turns';
import { runMessageWrite, runTranscript } from '../store/runs/transcript';
import { withRunModel, type RunRecord } from '../store/runs/runs';
import { copyThreadSources } from '../sources/csv/thread-copies';
import { forkedDataSources } from '../store/data-sources';
import { writeTogether, type Write } from '../store/runs/writes';
import type { ActivityDeps } from './deps';
import { discoverRun } from './discovery';
import { askLlm, llmTurn, type LlmTurnInput, type LlmTurnOutput } from './llm-turn';
import { integrationsPrefix } from './prompt-prefix';
import { countMessageTokens } from '../llm/token-count';
import { rememberPrepared, SNAPSHOT, type PrefixSnapshot } from './run-snapshots';
import { replayPreparation, type ReplayPreparation } from './replay-preparation';

/** What the workflow keeps of its run for its whole life (and across continue-as-new). */
export interface RunContext {
  threadId: string;
  agentId: string;
  maxTurns: number;
  /** the run's budget: its agent's limits, tightened by the run's own; absent when it has none */
  limits?: EffectiveLimits;
}

export interface PreparedRun {
  context: RunContext;
  tools: ToolAvailability;
  /** integrations pinned to their own task queue, to be discovered by a worker polling it */
  pinned: { integrationId: string; taskQueue: string }[];
}

export interface PrepareRunInput {
  runId: string;
  /**
   * the event numbers of the first turn, which runs in the same activity unless integrations are
   * pinned; a fork's (core/fork.ts ForkPoint) also its number and the step cursor there
   */
  firstTurn?: { eventSeq: number; turn?: number; step?: number };
  /** the run's own limits, given when it started */
  limits?: RunLimits;
  /** a sub-agent's run: how deep in its tree (at MAX_SUB_AGENT_DEPTH it is offered no sub-agents) */
  depth?: number;
  /** the names of the tools the run's caller runs (their schemas are the run's, in PostgreSQL) */
  callerTools?: string[];
}

export interface PrepareRunOutput extends PreparedRun {
  /** the first LLM turn's reply, absent when the workflow must discover pinned integrations first */
  firstTurn?: LlmTurnOutput;
}

/** Discovery may connect to slow servers: a heartbeat says the worker is still alive meanwhile. */
const HEARTBEAT_EVERY_MS = 5_000;

/**
 * A run's start: load the run by reference, discover its integrations' capabilities, build the
 * prompt prefix (the agent's instructions and the servers' conventional prompts), and then, unless
 * integrations pinned to other task queues must be discovered there first, the first LLM turn. One
 * activity, so a run's start costs one round trip through Temporal, and one read and one write
 * before the LLM is asked. What preparation found is recorded as snapshots with the run's input: a
 * retry (say, after the LLM failed) reuses them and only asks the LLM again; every turn reads them.
 */
export async function prepareRun(
  deps: ActivityDeps, { runId, firstTurn, limits, depth, callerTools }: PrepareRunInput,
): Promise<PrepareRunOutput> {
  // A fork's thread gets its original's tables first: its tools then offer source_query over them.
  if (firstTurn?.turn !== undefined) {
    const forked = await forkedDataSources(deps.db, runId);
    await copyThreadSources(deps.db, forked.threadId, forked.sources);
  }
  const read = await runToPrepare(deps.db, runId, [SNAPSHOT.prefix, SNAPSHOT.prepared]);
  const { run } = read;
  if (!run) throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, 'RunNotFound');
  const agent = read.agent && withRunModel(read.agent, run);
  if (!agent) throw ApplicationFailure.nonRetryable(`Agent ${run.agentId} does not exist`, 'AgentNotFound');
  const recorded = read.snapshots[SNAPSHOT.prepared]?.data as PreparedRun | undefined;
  const turn = firstTurn?.turn ?? 1;
  const first = agent.maxTurns >= 1 && firstTurn ? { seq: firstTurn.eventSeq, turn } : undefined;
  const prepared = recorded ?? await prepare(deps, run, agent, read, first, { limits, depth: depth ?? 0, callerTools });
  if (first === undefined || prepared.pinned.length > 0) return prepared;

  const input: LlmTurnInput = {
    runId, threadId: run.threadId, agentId: agent.id, turn, ...(firstTurn?.step !== undefined ? { step: firstTurn.step } : {}),
    nativeTools: offeredNativeTools(prepared.tools), hasDataSources: prepared.tools.hasDataSources, eventSeq: first.seq,
    usageBefore: { inputTokens: 0, outputTokens: 0 },
    ...(prepared.context.limits?.maxOutputTokens !== undefined ? { maxTokens: prepared.context.limits.maxOutputTokens } : {}),
    ...(prepared.tools.subAgents ? { subAgents: prepared.tools.subAgents } : {}),
    ...(prepared.context.limits?.maxToolCallsPerTurn ? { maxToolCallsPerTurn: prepared.context.limits.maxToolCallsPerTurn } : {}),
    ...(prepared.tools.callerTools ? { callerTools: prepared.tools.callerTools } : {}),
  };
  // After a recorded preparation, the turn is any turn: its reply may be stored already.
  // A fork's conversation before its first turn was recorded when it was forked.
  const transcript = turn > 1
    ? (await runTranscript(deps.db, runId, turn - 1)).map((m) => m.message)
    : [{ role: 'user' as const, content: run.input }];
  const reply = recorded ? await llmTurn(deps, input) : await askLlm(deps, input, agent, transcript, run.tenantId);
  return { ...prepared, firstTurn: reply };
}

/** What the run's start says of it besides its row: its own limits, its depth, its caller's tools. */
type RunOptions = { limits?: RunLimits; depth: number; callerTools?: string[] };

/** What preparation reads of the run in its first statement. */
type PrepareRead = Pick<
  Awaited<ReturnType<typeof runToPrepare>>, 'hasDataSources' | 'history' | 'snapshots' | 'integrations' | 'threadMetadata'
>;
type Discovery = Awaited<ReturnType<typeof discoverRun>>;
type StoredPrefix = { data: PrefixSnapshot; bytes: number };

/**
 * Discovery and the prefix, written in one statement with the run's input, run_started and, when
 * the first turn follows here (`first`: its event number and its turn's), its turn_started and
 * attempt. The prefix an earlier attempt recorded (or a fork's original) is kept: every turn must read one text.
 */
async function prepare(
  deps: ActivityDeps, run: RunRecord, agent: Agent, read: PrepareRead,
  first: { seq: number; turn: number } | undefined, runOptions: RunOptions,
): Promise<PreparedRun> {
  const runId = run.id;
  const ctx = Context.current();
  const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    // A replay runs with its original's tools, as recorded unless its calls go live (replay-preparation.ts),
    // on a thread that has the tables its original's had.
    const replay = run.replayOf ? await replayPreparation(deps, { id: run.id, replayOf: run.replayOf }, agent) : undefined;
    const runAgent = replay?.agent ?? agent;
    const discovery = replay?.recorded?.discovery
      ?? await discoverRun(deps, runId, runAgent.integrationIds, replay?.integrations ?? read.integrations);
    const writes: Write[] = [runMessageWrite(runId, 0, 0, { role: 'user', content: run.input })];
    const discoveryWrite = snapshotWrite(runId, SNAPSHOT.discovery, discovery.snapshot);
    writes.push(discoveryWrite);
    const prefix = await runPrefix(deps, runId, runAgent, read, discovery, writes, replay?.recorded?.prefix);
    const hasDataSources = read.hasDataSources || Boolean(replay?.copiedSources);
    const options = replay ? { ...runOptions, recorded: replay.recorded, callerTools: replay.callerTools } : runOptions;
    const prepared = await preparedRun(deps, run, runAgent, discovery, hasDataSources, options);
    writes.push(snapshotWrite(runId, SNAPSHOT.prepared, prepared), runStartedWrite(run, agent, prefix));
    if (first !== undefined && discovery.pinned.length === 0) {
      writes.push(eventWrite(runId, first.seq, 'turn_started', { turn: first.turn }), turnAttemptWrite(runId, first.turn));
    }
    if (deps.version) writes.push(runVersionWrite(runId, deps.version));
    await writeTogether(deps.db, writes);
    const discovered = { data: discoveryWrite.stored, bytes: discoveryWrite.bytes };
    rememberPrepared(runId, { ...(discovery.pinned.length === 0 ? { discovery: discovered } : {}), prefix, history: read.history });
    return prepared;
  } finally {
    clearInterval(heartbeat);
  }
}

/** The prompt prefix an earlier attempt recorded, else the one built now (its write joins `writes`). */
async function runPrefix(
  deps: ActivityDeps, runId: string, agent: Agent, read: PrepareRead, discovery: Discovery, writes: Write[], replayed?: PrefixSnapshot,
): Promise<StoredPrefix> {
  const recorded = read.snapshots[SNAPSHOT.prefix] as StoredPrefix | undefined;
  if (recorded) return recorded;
  if (replayed) {
    const write = snapshotWrite(runId, SNAPSHOT.prefix, replayed);
    writes.push(write);
    return { data: write.stored, bytes: write.bytes };
  }
  const { messages, injected } = await integrationsPrefix(deps, {
    instructions: agent.instructions, integrationIds: agent.integrationIds, promptOrder: agent.promptOrder,
    model: agent.model, promptWhen: agent.promptWhen, threadMetadata: read.threadMetadata,
    integrations: discovery.integrations, discovered: discovery.snapshot.integrations,
  });
  const snapshot: PrefixSnapshot = { messages, injectedPrompts: injected, instructions: agent.instructions };
  const write = snapshotWrite(runId, SNAPSHOT.prefix, snapshot);
  writes.push(write);
  if (agent.integrationIds.length > 0) {
    deps.logger.info({ runId, injected, bytes: write.bytes }, `Injected ${injected} conventional prompts from MCP servers`);
  }
  return { data: write.stored, bytes: write.bytes };
}

/** What the workflow keeps of the run: its context and budget, and the tools it may offer. */
async function preparedRun(
  deps: ActivityDeps, run: RunRecord, agent: Agent, discovery: Discovery, hasDataSources: boolean,
  { limits: runLimits, depth, callerTools, recorded }: RunOptions & { recorded?: ReplayPreparation['recorded'] },
): Promise<PreparedRun> {
  const limits = effectiveLimits(agent.limits, runLimits);
  const subAgents = depth >= MAX_SUB_AGENT_DEPTH ? {}
    : recorded ? { ...(recorded.subAgents ? { subAgents: recorded.subAgents } : {}) } : await subAgentRoutes(deps.db, agent.subAgents);
  return {
    context: { threadId: run.threadId, agentId: agent.id, maxTurns: agent.maxTurns, ...(Object.keys(limits).length > 0 ? { limits } : {}) },
    tools: {
      mcpRoutes: discovery.mcpRoutes,
      integrationCount: discovery.integrationCount,
      ...(discovery.unauthorized.length > 0 ? { unauthorized: discovery.unauthorized } : {}),
      // Tables imported by earlier runs of the thread (by any agent) stay queryable; a recorded replay's original's thread had them.
      hasDataSources: recorded?.hasDataSources ?? hasDataSources,
      ...subAgents,
      ...(callerTools?.length ? { callerTools } : {}),
    },
    pinned: discovery.pinned,
  };
}

/**
 * run_started, written once complete, so that the event reads the same live and replayed. Counted
 * from the recorded prefix, which a retry reuses: the figures are the same at every attempt.
 */
function runStartedWrite(run: RunRecord, agent: Agent, prefix: StoredPrefix): Write {
  const tokens = countMessageTokens(prefix.data.messages, agent.model);
  const prefixFigures = {
    messageCount: prefix.data.messages.length, injectedPrompts: prefix.data.injectedPrompts, bytes: prefix.bytes,
    tokens: tokens.total, tokensEstimated: tokens.estimated,
  };
  return eventWrite(run.id, 1, 'run_started', { threadId: run.threadId, agentId: agent.id, agentName: agent.name, prefix: prefixFigures });
}

/** The agent's sub-agents as the run's tools (`agent__<name>`); a disabled one is left out. */
async function subAgentRoutes(db: ActivityDeps['db'], ids: string[]): Promise<{ subAgents?: Record<string, SubAgentRoute> }> {
  const agents = (await subAgentsByIds(db, ids)).filter((a) => !a.disabled);
  if (agents.length === 0) return {};
  const route = (a: (typeof agents)[number]): SubAgentRoute => ({
    agentId: a.id, agentName: a.name, ...(a.hasIntegrations ? { hasIntegrations: true } : {}),
  });
  return { subAgents: Object.fromEntries(agents.map((a) => [subAgentToolName(a.name), route(a)])) };
}

export function createPrepareRunActivities(deps: ActivityDeps) {
  return {
    prepareRun: (input: PrepareRunInput) => prepareRun(deps, input),
  };
}
