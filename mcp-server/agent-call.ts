import type { CallToolResult, InputRequiredResult } from '@modelcontextprotocol/server';
import { EngineError } from '../core/engine-error';
import { callerToolText } from '../core/caller-tools';
import type { ExposedAgent } from '../use-cases/agents/exposed-agents';
import { prepareAgentCall, type AgentCallThread } from '../use-cases/runs/agent-calls';
import { followRunEvents, type RunEvent } from '../use-cases/runs/follow-events';
import { EventCursor } from '../use-cases/runs/event-cursor';
import { lastEventSeq, runProgress } from '../use-cases/runs/run-progress';
import { readRun } from '../use-cases/runs/runs';
import type { RunView } from '../core/run-view';
import { startRun } from '../use-cases/runs/start-run';
import type { Caller } from '../use-cases/caller';
import type { AgentCallContext, AgentCallDeps } from './call-context';
import { ClientQuestions } from './client-questions';
import { describeEvent } from './event-progress';
import { progressReporter, type ProgressReporter } from './progress-reporter';
import { textProgress } from './text-progress';

/** how often a call whose run is silent checks whether its workflow closed from outside (which writes nothing) */
const IDLE_CHECK_MS = 5_000;

export type AgentCallResult = CallToolResult | InputRequiredResult;

const errorResult = (text: string, meta?: Record<string, unknown>): CallToolResult => ({
  isError: true, content: [{ type: 'text', text }], ...(meta ? { _meta: meta } : {}),
});

/** `tools/call` on an agent: a new thread (or the given one), a durable run, progress from its event log, its answer. */
export async function callAgent(
  deps: AgentCallDeps, agent: ExposedAgent, args: Record<string, unknown>, ctx: AgentCallContext,
): Promise<AgentCallResult> {
  const progress = progressReporter(ctx, deps.logger);
  const started = await beginAgentRun(deps, agent, args, progress.send, ctx.caller);
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

type Report = (value: number, message: string) => Promise<void>;

/**
 * The start of an agent call, plain or as a task: the arguments checked, a new thread (or the
 * given one), the run started. An error result when the arguments or the start were refused.
 * The thread and the run are `caller`'s tenant's, and the run says `caller` started it.
 */
export async function beginAgentRun(
  deps: AgentCallDeps, agent: ExposedAgent, args: Record<string, unknown>, report: Report = async () => undefined,
  caller: Caller,
): Promise<BegunRun | { refused: CallToolResult }> {
  // Its runs would wait for tools only a caller of the HTTP API answers.
  if (agent.callerTools) return { refused: errorResult(callerToolText.mcpRefused) };
  let call: AgentCallThread;
  try {
    call = await prepareAgentCall(deps.db, caller.tenantId, agent, args);
  } catch (err) {
    if (err instanceof EngineError) return { refused: errorResult(err.message) };
    throw err;
  }
  const { threadId, threadOwner } = call;
  await report(0, 'Starting agent');
  let runId: string;
  try {
    runId = (await startRun(deps, caller, { threadId, input: call.input, agentId: agent.id })).run.id;
  } catch (err) {
    await report(1, 'Failed');
    if (err instanceof EngineError) return { refused: errorResult(err.message, { threadId }) };
    throw err;
  }
  const meta = { runId, threadId, agentId: agent.id, ...(threadOwner ? { threadAgentId: threadOwner.id } : {}) };
  const ownerNote = threadOwner ? [{
    type: 'text' as const,
    text: `Note: thread ${threadId} belongs to the agent ${threadOwner.name}; `
      + `this turn was run by ${agent.name}, which sees the thread's messages.`,
  }] : [];
  return { runId, meta, ownerNote };
}

/**
 * A 2026-era retry that carries the answer to an approval question: it follows the run its
 * requestState names (never starting another) from where the client left it.
 */
export async function resumeAgentCall(
  deps: AgentCallDeps, runId: string, ctx: AgentCallContext, skipToolCallId?: string,
): Promise<AgentCallResult> {
  const run = await readRun(deps.db, runId);
  if (!run) return errorResult(`Run ${runId} does not exist`);
  const quietUntilSeq = await lastEventSeq(deps.db, runId);
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
async function followCall(
  deps: AgentCallDeps, call: FollowedCall, ctx: AgentCallContext, progress: ProgressReporter,
): Promise<AgentCallResult> {
  const { runId, meta } = call;
  // Watched before the first read, so that nothing written meanwhile goes unheard.
  const watch = deps.changes.watch(runId, ['event', 'progress', 'ended']);
  const follow = followRunEvents(deps.db, runId, {
    after: EventCursor.after(0), progressCheckMs: IDLE_CHECK_MS, signal: ctx.signal, progress: () => runProgress(deps, runId),
    changed: () => watch.next(IDLE_CHECK_MS, ctx.signal),
  });
  const questions = new ClientQuestions(deps, runId, ctx);
  // The model's words as they come, in the progress messages of a client that asked for progress.
  const words = ctx.progress ? textProgress(deps, runId, (text) => progress.step(text)) : undefined;
  try {
    for await (const item of follow) {
      if (item.kind !== 'event') continue;
      const asked = await reportEvent(call, item.event, questions, progress);
      if (asked) return asked;
    }
  } finally {
    watch.close();
    words?.close();
    await questions.close();
  }
  if (ctx.signal.aborted) {
    if (ctx.clientCancelled?.()) await cancelWorkflow(deps, runId);
    return errorResult('The client went away; the run goes on', meta);
  }
  const run = await readRun(deps.db, runId);
  await progress.send(1, run?.status === 'completed' ? 'Completed' : 'Failed');
  return runOutcome(run, meta, call.ownerNote);
}

/** One event as progress, and the approval questions it opens or closes; the input_required to answer with, when one is. */
async function reportEvent(
  call: FollowedCall, event: RunEvent, questions: ClientQuestions, progress: ProgressReporter,
): Promise<InputRequiredResult | undefined> {
  const message = event.seq > call.quietUntilSeq ? describeEvent(call.runId, event, questions.asksClient) : undefined;
  if (message) await progress.step(message);
  if (event.type === 'approval_resolved') questions.withdraw(String(event.data.toolCallId));
  if (event.type !== 'approval_requested') return undefined;
  return questions.ask(event, call.skipToolCallId);
}

/** What an agent call answers once its run has ended: its output, or why there is none. */
export function runOutcome(
  run: Pick<RunView, 'status' | 'output' | 'error'> | undefined, meta: Record<string, string>, ownerNote: CallToolResult['content'] = [],
): CallToolResult {
  if (run?.status === 'completed') return { content: [{ type: 'text', text: run.output ?? '' }, ...ownerNote], _meta: meta };
  if (run?.status === 'cancelled') return errorResult('The agent run was cancelled', meta);
  if (run?.status === 'failed') return errorResult(`The agent run failed: ${run.error?.message ?? 'unknown error'}`, meta);
  return errorResult('The agent run closed without recording an outcome (terminated or timed out)', meta);
}

export async function cancelWorkflow(deps: Pick<AgentCallDeps, 'client' | 'logger'>, runId: string): Promise<void> {
  try {
    await deps.client.workflow.getHandle(runId).cancel();
  } catch (err) {
    // Already closed: nothing to cancel.
    deps.logger.debug({ err, runId }, 'cancel of an MCP agent call found no running workflow');
  }
}
