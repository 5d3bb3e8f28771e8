import { useState } from 'preact/hooks';
import { followRunEvents, getJson, postJson } from './api';
import { BudgetItem, waitingBudget, type WaitingBudget } from './budget-item';
import { CallerToolItem, type WaitingCallerTool } from './caller-tool-item';
import { useLoad } from './hooks';
import { InputForm } from './input-form';
import { withAdminKey } from './prompts';
import { ErrorLine, LongText, when } from './text';
import type { CallerToolDeclaration, PendingApproval, PendingInput, RunSummary, RunView } from './types';
import { approvalWords, inputWords } from './waiting';

const REFRESH_MS = 3000;
/** Running runs read in full on each refresh, besides those listed as waiting. */
const RUNNING_READ = 30;
/** How long the page follows a run's events to read the decision it recorded (its keyKind). */
const DECISION_READ_MS = 10_000;

interface Waiting {
  approvals: (PendingApproval & { runId: string })[]; inputs: (PendingInput & { runId: string })[]; budgets: WaitingBudget[];
  callers: WaitingCallerTool[];
}

async function loadWaiting(signal: AbortSignal): Promise<Waiting> {
  // The waiting listing lags a moment behind what the runs store: running runs are read too (the
  // first RUNNING_READ of them), so that a question or an approval shows as soon as it is stored.
  const [waitingRuns, runningRuns] = await Promise.all([
    getJson<{ runs: RunSummary[] }>('/v1/runs?waiting=true&limit=100', signal),
    getJson<{ runs: RunSummary[] }>(`/v1/runs?status=running&limit=${RUNNING_READ}`, signal),
  ]);
  const ids = [...new Set([...waitingRuns.runs, ...runningRuns.runs].map((r) => r.id))];
  const runs = await Promise.all(ids.map((id) => getJson<RunView>(`/v1/runs/${encodeURIComponent(id)}`, signal)
    .catch(() => undefined)));
  const waiting: Waiting = { approvals: [], inputs: [], budgets: [], callers: [] };
  const seen = new Set<string>();
  // A sub-agent's wait is listed on its parent too, with the sub-agent's runId: decided there, listed once.
  const first = (key: string) => !seen.has(key) && Boolean(seen.add(key));
  for (const run of runs) {
    if (!run) continue;
    for (const a of run.pendingApprovals) {
      if (first(`a:${a.runId ?? run.id}:${a.toolCallId}`)) waiting.approvals.push({ ...a, runId: a.runId ?? run.id });
    }
    for (const i of run.pendingInputs) {
      if (first(`i:${i.runId ?? run.id}:${i.inputId}`)) waiting.inputs.push({ ...i, runId: i.runId ?? run.id });
    }
    // A run's own request only (a sub-agent's is listed as waiting itself); a new request after a raise is a new item.
    if (run.pendingBudget && first(budgetKey(run.id, run.pendingBudget))) waiting.budgets.push(waitingBudget(run, run.pendingBudget));
    if (run.pendingCallerTools?.length) waiting.callers.push(...await callerToolsOf(run, signal));
  }
  return waiting;
}

/** A run's calls of its caller's tools, each with its tool as the run declared it (for the form its schema makes). */
async function callerToolsOf(run: RunView, signal: AbortSignal): Promise<WaitingCallerTool[]> {
  const declared = await getJson<{ callerTools: CallerToolDeclaration[] }>(`/v1/runs/${encodeURIComponent(run.id)}/caller-tools`, signal)
    .catch(() => ({ callerTools: [] }));
  return run.pendingCallerTools.map((c) => ({ ...c, runId: run.id, tool: declared.callerTools.find((t) => t.name === c.name) }));
}

const budgetKey = (runId: string, budget: { requestedAt: string }) => `b:${runId}:${budget.requestedAt}`;

/** The decision the run recorded, read from its events: who decided, and with which kind of key. */
async function recordedDecision(runId: string, toolCallId: string): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), DECISION_READ_MS);
  let found = 'recorded';
  await followRunEvents(runId, ({ event, data }) => {
    if (event === 'approval_resolved' && data.toolCallId === toolCallId && typeof data.keyKind === 'string') {
      found = `${String(data.status)} by ${String(data.by)}, keyKind ${data.keyKind}`;
      controller.abort();
    }
  }, controller.signal);
  clearTimeout(timer);
  return found;
}

/** What became of an item answered from this page: recorded, or refused because it was no longer open. */
interface Outcome { words: string; refused?: boolean }

/**
 * Everything that waits for a person, across runs: tool calls to approve or deny, servers'
 * questions to answer, runs whose budget to raise or stop, calls of caller tools to answer.
 */
export function InboxPage() {
  const { data, error, reload } = useLoad(loadWaiting, [], REFRESH_MS);
  const [done, setDone] = useState<Record<string, Outcome>>({});
  const finish = (key: string, words: string, refused = false) => { setDone((d) => ({ ...d, [key]: { words, refused } })); reload(); };
  const openApprovals = data?.approvals.filter((a) => !done[`a:${a.runId}:${a.toolCallId}`]) ?? [];
  const openInputs = data?.inputs.filter((i) => !done[`i:${i.runId}:${i.inputId}`]) ?? [];
  const openBudgets = data?.budgets.filter((b) => !done[budgetKey(b.runId, b)]) ?? [];
  const openCallers = data?.callers.filter((c) => !done[`c:${c.runId}:${c.toolCallId}`]) ?? [];
  const summary = openApprovals.length + openInputs.length + openBudgets.length + openCallers.length === 0 ? 'Nothing waits for a person.'
    : `${openCallers.length ? `${openCallers.length} call(s) wait for their caller; ` : ''}`
      + `${openApprovals.length} tool call(s) wait for approval, ${openInputs.length} question(s) wait for an answer `
      + `and ${openBudgets.length} run(s) wait for budget.`;
  return (
    <section>
      <h1>Waiting for a person</h1>
      <ErrorLine error={error} />
      {!data ? <p>Loading…</p> : <p class="summary">{summary}</p>}
      {Object.entries(done).map(([key, { words, refused }]) => (
        <p key={key} class={refused ? 'error' : 'decided'} role={refused ? 'alert' : undefined}>{words}</p>
      ))}
      {openApprovals.map((a) => (
        <ApprovalItem key={`${a.runId}:${a.toolCallId}`} approval={a}
          onDecided={(words) => finish(`a:${a.runId}:${a.toolCallId}`, words)} />
      ))}
      {openInputs.map((i) => (
        <InputItem key={`${i.runId}:${i.inputId}`} input={i}
          onAnswered={(status) => finish(`i:${i.runId}:${i.inputId}`, `The question of run ${i.runId} was answered: ${status}.`)} />
      ))}
      {openBudgets.map((b) => (
        <BudgetItem key={budgetKey(b.runId, b)} budget={b} onAnswered={(words, refused) => finish(budgetKey(b.runId, b), words, refused)} />
      ))}
      {openCallers.map((c) => (
        <CallerToolItem key={`${c.runId}:${c.toolCallId}`} call={c}
          onAnswered={(words, refused) => finish(`c:${c.runId}:${c.toolCallId}`, words, refused)} />
      ))}
    </section>
  );
}

function InputItem({ input, onAnswered }: { input: PendingInput & { runId: string }; onAnswered: (status: string) => void }) {
  return (
    <article class="item">
      <h2>{inputWords(input)}</h2>
      <p>
        Run <a href={`#/runs/${encodeURIComponent(input.runId)}`}>{input.runId}</a>; asked {when(input.requestedAt)};
        expires {when(input.expiresAt)}.
      </p>
      <InputForm runId={input.runId} input={input} onAnswered={onAnswered} />
    </article>
  );
}

interface ApprovalItemProps { approval: PendingApproval & { runId: string }; onDecided: (words: string) => void }

function ApprovalItem({ approval, onDecided }: ApprovalItemProps) {
  const [reason, setReason] = useState('');
  const [failure, setFailure] = useState<unknown>();
  const decide = (decision: 'approve' | 'deny') => {
    const path = `/v1/runs/${encodeURIComponent(approval.runId)}/approvals/${encodeURIComponent(approval.toolCallId)}`;
    const body = { decision, ...(reason.trim() ? { reason: reason.trim() } : {}) };
    withAdminKey((key) => postJson(path, body, key))
      .then(() => recordedDecision(approval.runId, approval.toolCallId))
      .then((recorded) => onDecided(`${approval.name} in run ${approval.runId}: ${recorded}.`), setFailure);
  };
  return (
    <article class="item">
      <h2>{approvalWords(approval)}</h2>
      <p>
        Run <a href={`#/runs/${encodeURIComponent(approval.runId)}`}>{approval.runId}</a>, turn {approval.turn};
        asked {when(approval.requestedAt)}; denied unless decided by {when(approval.expiresAt)}.
      </p>
      <div class="label">Arguments</div>
      <LongText text={JSON.stringify(approval.arguments, null, 2) ?? ''} label="arguments" />
      <form class="decide" onSubmit={(e) => e.preventDefault()}>
        <label>
          Reason (optional; the model reads it) <textarea name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={() => decide('approve')}>Approve</button>
        <button type="button" onClick={() => decide('deny')}>Deny</button>
      </form>
      <ErrorLine error={failure} />
    </article>
  );
}
