import type { Client } from '@temporalio/client';
import type { CallToolResult, InputRequiredResult } from '@modelcontextprotocol/server';
import { renderTemplate } from '../store/agent-files/parse-chatmd';
import { seedThreadMessages, type ExposedAgent } from '../store/agent-files/file-agents';
import { inTransaction, type Db } from '../store/pool';
import type { RunChangeFeed } from '../store/runs/change-feed';
import { findRunResult } from '../store/runs/results';
import { nextEventSeq, type RunEvent } from '../store/runs/events';
import { unstorableReason } from '../store/storable-text';
import { findThread, insertThread } from '../store/threads/threads';
import { findAgent } from '../store/agents';
import type { Logger } from '../platform/logger';
import type { SearchAttributeGuard } from '../platform/temporal/search-attributes';
import { EngineError } from '../core/engine-error';
import { followRunEvents, type RunProgress } from '../use-cases/runs/follow-events';
import { EventCursor } from '../use-cases/runs/event-cursor';
import { readRun } from '../use-cases/runs/runs';
import type { RunView } from '../core/run-view';
import { MAX_RUN_INPUT_CHARS, startRun } from '../use-cases/runs/start-run';
import type { CallRegistry } from './call-registry';
import { askForApproval, type AskClient } from './approval-elicitation';
import { APPROVAL_STATUS_WORDS, type ApprovalStatus } from '../core/approval';
import { decideApproval } from '../use-cases/runs/approvals';
import { textProgress } from './text-progress';

export interface AgentCallDeps {
  db: Db;
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** the process's run change feed: a call reads its run's event log when PostgreSQL says the run changed */
  changes: RunChangeFeed;
  /** the namespace's search attributes, which a run's start carries */
  searchAttributes: SearchAttributeGuard;
}

/** how often a call whose run is silent checks whether its workflow closed from outside (which writes nothing) */
const IDLE_CHECK_MS = 5_000;

export interface AgentCallContext {
  requestId: string | number;
  /** aborted when the client goes away: the run goes on (it is durable); only a cancel notification cancels it */
  signal: AbortSignal;
  /** set when the client asked for progress */
  progress?: (progress: number, message: string) => Promise<void>;
  /** set when the run's approvals are asked of the client's user (stdio, a client with elicitation) */
  ask?: AskClient;
  /** 2026 era, a client that declared form elicitation: an approval ends the request with input_required */
  questions?: (runId: string, skip?: string) => Promise<InputRequiredResult | undefined>;
  /** whether the aborted signal is the client's cancel (2026 era over HTTP: it closed the request's stream) */
  clientCancelled?: () => boolean;
  registry?: CallRegistry;
}

export type AgentCallResult = CallToolResult | InputRequiredResult;

const errorResult = (text: string, meta?: Record<string, unknown>): CallToolResult => ({
  isError: true, content: [{ type: 'text', text }], ...(meta ? { _meta: meta } : {}),
});

/** `tools/call` on an agent: a new thread (or the given one), a durable run, progress from its event log, its answer. */
export async function callAgent(deps: AgentCallDeps, agent: ExposedAgent, args: Record<string, unknown>, ctx: AgentCallContext): Promise<AgentCallResult> {
  const progress = progressReporter(ctx, deps.logger);
  const started = await beginAgentRun(deps, agent, args, progress.send);
  if ('refused' in started) return started.refused;
  const { runId } = started;
  if (ctx.registry && (await ctx.registry.register(ctx.requestId, runId))) await cancelWorkflow(deps, runId);
  return followCall(deps, { ...started, quietUntilSeq: 0 }, ctx, progress);
}

/** A run an agent call started: its id, what the result's _meta says, and a note when it ran on another agent's thread. */
export interface BegunRun {
  runId: string;
  meta: Record<string, string>;
  ownerNote: CallToolResult['content'];
}

/**
 * The start of an agent call, plain or as a task: the arguments checked, a new thread (or the
 * given one), the run started. An error result when the arguments or the start were refused.
 */
export async function beginAgentRun(
  deps: AgentCallDeps, agent: ExposedAgent, args: Record<string, unknown>, report: (value: number, message: string) => Promise<void> = async () => undefined,
): Promise<BegunRun | { refused: CallToolResult }> {
  if (typeof args.input !== 'string') return { refused: errorResult('The "input" argument is required and must be a string') };
  if (args.input.length > MAX_RUN_INPUT_CHARS) return { refused: errorResult(`The "input" argument must be at most ${MAX_RUN_INPUT_CHARS} characters`) };
  const unstorable = unstorableReason(args.input);
  if (unstorable) return { refused: errorResult(`The "input" argument contains ${unstorable}`) };
  if (args.threadId !== undefined && typeof args.threadId !== 'string') return { refused: errorResult('The "threadId" argument must be a string') };

  let threadId: string;
  let input = args.input;
  // The agent called runs on another agent's thread when asked to (as POST /v1/threads/:id/runs with
  // agentId does); the answer says so, since the thread stays its own agent's.
  let threadOwner: { id: string; name: string } | undefined;
  if (args.threadId) {
    const thread = await findThread(deps.db, args.threadId);
    if (!thread) return { refused: errorResult(`Thread ${args.threadId} does not exist`) };
    threadId = thread.id;
    if (thread.agentId !== agent.id) threadOwner = (await findAgent(deps.db, thread.agentId)) ?? { id: thread.agentId, name: thread.agentId };
  } else {
    const rendered = renderTemplate(agent.template, args.input);
    input = rendered.input;
    threadId = await inTransaction(deps.db, async (tx) => {
      const thread = await insertThread(tx, agent.id);
      await seedThreadMessages(tx, thread.id, rendered.history);
      return thread.id;
    });
  }

  await report(0, 'Starting agent');
  let runId: string;
  try {
    runId = (await startRun(deps, { threadId, input, agentId: agent.id })).run.id;
  } catch (err) {
    await report(1, 'Failed');
    if (err instanceof EngineError) return { refused: errorResult(err.message, { threadId }) };
    throw err;
  }
  const meta = { runId, threadId, agentId: agent.id, ...(threadOwner ? { threadAgentId: threadOwner.id } : {}) };
  const ownerNote = threadOwner ? [{
    type: 'text' as const,
    text: `Note: thread ${threadId} belongs to the agent ${threadOwner.name}; this turn was run by ${agent.name}, which sees the thread's messages.`,
  }] : [];
  return { runId, meta, ownerNote };
}

/**
 * A 2026-era retry that carries the answer to an approval question: it follows the run its
 * requestState names (never starting another) from where the client left it.
 */
export async function resumeAgentCall(deps: AgentCallDeps, runId: string, ctx: AgentCallContext, skipToolCallId?: string): Promise<AgentCallResult> {
  const run = await readRun(deps.db, runId);
  if (!run) return errorResult(`Run ${runId} does not exist`);
  const quietUntilSeq = (await nextEventSeq(deps.db, runId)) - 1;
  const meta = { runId, threadId: run.threadId, agentId: run.agentId };
  return followCall(deps, { runId, meta, ownerNote: [], quietUntilSeq, skipToolCallId }, ctx, progressReporter(ctx, deps.logger));
}

interface FollowedCall {
  runId: string;
  meta: Record<string, string>;
  ownerNote: CallToolResult['content'];
  /** events up to this one were reported to the client already (a resumed call) */
  quietUntilSeq: number;
  /** the approval the client dismissed: not asked again on this request */
  skipToolCallId?: string;
}

/** Reports the run's events as progress until it ends (its answer) or an approval is to be asked of a 2026-era client. */
async function followCall(deps: AgentCallDeps, call: FollowedCall, ctx: AgentCallContext, progress: ReturnType<typeof progressReporter>): Promise<AgentCallResult> {
  const { runId, meta } = call;
  // Watched before the first read, so that nothing written meanwhile goes unheard.
  const watch = deps.changes.watch(runId, ['event', 'progress', 'ended']);
  const follow = followRunEvents(deps.db, runId, {
    after: EventCursor.after(0), progressCheckMs: IDLE_CHECK_MS, signal: ctx.signal, progress: () => runProgress(deps, runId),
    changed: () => watch.next(IDLE_CHECK_MS, ctx.signal),
  });
  // A question to the client is withdrawn once its call is decided elsewhere (the API, the CLI, the
  // timeout), and every question still open when the call ends or the client goes away. (Plain
  // controllers held here, not AbortSignal.any: a combined signal may be collected while it waits.)
  const asking = new Map<string, AbortController>();
  const withdrawAll = () => {
    for (const question of asking.values()) question.abort();
  };
  ctx.signal.addEventListener('abort', withdrawAll, { once: true });
  const questions: Promise<void>[] = [];
  const asksClient = Boolean(ctx.ask ?? ctx.questions);
  // The model's words as they come, in the progress messages of a client that asked for progress.
  const words = ctx.progress ? textProgress(deps, runId, (text) => progress.step(text)) : undefined;
  try {
    for await (const item of follow) {
      if (item.kind !== 'event') continue;
      const { event } = item;
      const message = event.seq > call.quietUntilSeq ? describeEvent(runId, event, asksClient) : undefined;
      if (message) await progress.step(message);
      if (event.type === 'approval_resolved') asking.get(String(event.data.toolCallId))?.abort();
      if (event.type === 'approval_requested' && ctx.questions) {
        const question = await ctx.questions(runId, call.skipToolCallId);
        if (question) return question;
      }
      if (event.type === 'approval_requested' && ctx.ask) {
        const question = new AbortController();
        asking.set(String(event.data.toolCallId), question);
        questions.push(askForApproval({
          db: deps.db, logger: deps.logger, ask: ctx.ask,
          apply: (decision) => decideApproval(deps, { ...decision, keyKind: 'mcp_client' }),
        }, runId, event, question.signal));
      }
    }
  } finally {
    watch.close();
    words?.close();
    ctx.signal.removeEventListener('abort', withdrawAll);
    withdrawAll();
    await Promise.all(questions);
  }
  if (ctx.signal.aborted) {
    if (ctx.clientCancelled?.()) await cancelWorkflow(deps, runId);
    return errorResult('The client went away; the run goes on', meta);
  }

  const run = await readRun(deps.db, runId);
  await progress.send(1, run?.status === 'completed' ? 'Completed' : 'Failed');
  return runOutcome(run, meta, call.ownerNote);
}

/** What an agent call answers once its run has ended: its output, or why there is none. */
export function runOutcome(run: Pick<RunView, 'status' | 'output' | 'error'> | undefined, meta: Record<string, string>, ownerNote: CallToolResult['content'] = []): CallToolResult {
  if (run?.status === 'completed') return { content: [{ type: 'text', text: run.output ?? '' }, ...ownerNote], _meta: meta };
  if (run?.status === 'cancelled') return errorResult('The agent run was cancelled', meta);
  if (run?.status === 'failed') return errorResult(`The agent run failed: ${run.error?.message ?? 'unknown error'}`, meta);
  return errorResult('The agent run closed without recording an outcome (terminated or timed out)', meta);
}

export async function cancelWorkflow(deps: { client: Client; logger: Logger }, runId: string): Promise<void> {
  try {
    await deps.client.workflow.getHandle(runId).cancel();
  } catch (err) {
    // Already closed: nothing to cancel.
    deps.logger.debug({ err, runId }, 'cancel of an MCP agent call found no running workflow');
  }
}

function describeEvent(runId: string, event: RunEvent, asksClient: boolean): string | undefined {
  const d = event.data;
  switch (event.type) {
    case 'turn_started': return `Turn ${String(d.turn)}`;
    case 'tool_call_started': return `Calling ${String(d.name)}`;
    case 'tool_call_ended': return `${String(d.name)} ${d.status === 'ok' ? 'returned' : 'failed'} after ${String(d.durationMs)} ms`;
    case 'approval_requested': {
      const where = `POST /v1/runs/${runId}/approvals/${String(d.toolCallId)} or agent-engine approve|deny ${runId} ${String(d.toolCallId)}`;
      return asksClient
        ? `Waiting for approval of ${String(d.name)}: answer the question, or decide with ${where}`
        : `Waiting for approval of ${String(d.name)}: the run waits until it is decided with ${where}`;
    }
    case 'approval_resolved': return `${String(d.name)} ${APPROVAL_STATUS_WORDS[d.status as ApprovalStatus] ?? String(d.status)}`;
    default: return undefined;
  }
}

/** Progress must only grow: 0 at start, k/(k+1) for the k-th step, 1 at the end. */
function progressReporter(ctx: AgentCallContext, logger: Logger) {
  let steps = 0;
  const send = async (value: number, message: string) => {
    if (!ctx.progress || ctx.signal.aborted) return;
    // A client that cannot take a notification must not lose its answer.
    await ctx.progress(value, message).catch((err: unknown) => logger.debug({ err }, 'progress notification not sent'));
    // The SDK client handles a notification a microtask after reading it but a response at once:
    // a final progress read together with the result is dropped. A short pause keeps them apart.
    if (value === 1) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  return {
    send,
    step: (message: string) => {
      steps += 1;
      return send(steps / (steps + 1), message);
    },
  };
}

async function runProgress(deps: { db: Db; client: Client }, runId: string): Promise<RunProgress> {
  if (await findRunResult(deps.db, runId)) return 'ended';
  try {
    const description = await deps.client.withDeadline(Date.now() + 2_000, () => deps.client.workflow.getHandle(runId).describe());
    if (description.status.name === 'RUNNING') return 'running';
  } catch {
    return 'running';
  }
  return (await findRunResult(deps.db, runId)) ? 'ended' : 'closed_without_result';
}
