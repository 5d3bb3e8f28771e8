import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, followRunEvents, getJson, postJson, type StreamEvent } from './api';
import { Conversation } from './conversation';
import { usd } from './budget';
import { useLoad } from './hooks';
import { NO_LIVE_TEXT, nextLiveText } from './live-text';
import { withAdminKey } from './prompts';
import { ErrorLine, ExternalLink, LongText, when } from './text';
import type { Agent, ConsoleSettings, Cost, RunMessagePage, RunView } from './types';
import { waitingWords } from './waiting';

interface RunData { run: RunView; conversation: RunMessagePage; agent?: Agent; settings: ConsoleSettings }

/** The settings do not change while the page is open: read once, kept once read. */
let settingsRead: ConsoleSettings | undefined;

/**
 * Read again after each event of the run: its conversation so far, then the run; its agent alone
 * (gone: none), not every agent. The conversation first: the run read after it is as new or newer,
 * so each tool call whose result the conversation shows is among the run's ended calls, with its
 * status and duration (a tool call's result and its record are written together).
 */
async function loadRun(runId: string, signal: AbortSignal): Promise<RunData> {
  const conversation = await runMessages(runId, signal);
  const run = await getJson<RunView>(`/v1/runs/${encodeURIComponent(runId)}`, signal);
  const [agent, settings] = await Promise.all([
    getJson<Agent>(`/v1/agents/${encodeURIComponent(run.agentId)}`, signal).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return undefined;
      throw err;
    }),
    settingsRead ?? getJson<ConsoleSettings>('/v1/console/settings', signal),
  ]);
  settingsRead = settings;
  return { run, conversation, agent, settings };
}

/**
 * The run's own transcript, which the thread's messages receive only when the run ends. Read from
 * the start each time: a tool call that ends early is stored before the calls of its turn listed earlier.
 */
async function runMessages(runId: string, signal: AbortSignal): Promise<RunMessagePage> {
  const pages: RunMessagePage[] = [];
  for (let after: string | null = '0.0'; after !== null;) {
    const page: RunMessagePage = await getJson(`/v1/runs/${encodeURIComponent(runId)}/messages?after=${after}&limit=200`, signal);
    pages.push(page);
    after = page.nextAfter;
  }
  return { input: pages[0].input, messages: pages.flatMap((p) => p.messages), nextAfter: null };
}

interface Decision { toolCallId: string; decision: string; status: string; reason: string | null; keyKind: string; by: string }

/**
 * The run's event stream while the page shows it: the model's words as it writes them, and each
 * decision on a tool call as recorded (who decided, with which kind of key); every other event
 * reads the run again, a moment later, once for a burst of events.
 */
function useRunEvents(runId: string, loaded: boolean, reload: () => void): { liveText: string; decisions: Decision[] } {
  const [live, setLive] = useState(NO_LIVE_TEXT);
  const [decisions, setDecisions] = useState<Decision[]>([]);
  const reloadRef = useRef(reload);
  reloadRef.current = reload;

  useEffect(() => {
    if (!loaded) return;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const soon = () => { clearTimeout(timer); timer = setTimeout(() => reloadRef.current(), 250); };
    const onEvent = ({ event, data: payload }: StreamEvent) => {
      setLive((shown) => nextLiveText(shown, event, payload));
      if (event === 'text_delta' || event === 'text_reset') return;
      if (event === 'approval_resolved' && typeof payload.keyKind === 'string') {
        setDecisions((list) => [...list, payload as unknown as Decision]);
      }
      soon();
    };
    void followRunEvents(runId, onEvent, controller.signal).then(soon);
    return () => { controller.abort(); clearTimeout(timer); };
  }, [runId, loaded]);
  return { liveText: live.text, decisions };
}

/** A run: first rendered from completed requests, then kept up to date by its event stream. */
export function RunPage({ runId }: { runId: string }) {
  const { data, error, reload } = useLoad((signal) => loadRun(runId, signal), [runId]);
  const { liveText, decisions } = useRunEvents(runId, data !== undefined, reload);
  const [actionError, setActionError] = useState<unknown>();

  if (!data) return <section><h1>Run {runId}</h1>{error ? <ErrorLine error={error} /> : <p>Loading…</p>}</section>;
  const { run, conversation, agent, settings } = data;
  const cancel = () => withAdminKey((key) => postJson(`/v1/runs/${encodeURIComponent(run.id)}/cancel`, {}, key))
    .then(reload, setActionError);
  // The fork is a run of its own: the page goes to it.
  const fork = (atTurn: number) => postJson<{ id: string }>(`/v1/runs/${encodeURIComponent(run.id)}/fork`, { atTurn })
    .then((forked) => { location.hash = `#/runs/${encodeURIComponent(forked.id)}`; }, setActionError);
  const awaitingApproval = new Set(run.pendingApprovals.filter((a) => !a.runId || a.runId === run.id).map((a) => a.toolCallId));
  return (
    <section>
      <h1>Run {run.id}</h1>
      <RunStatus run={run} agent={agent} />
      <p class="actions">
        <TemporalLink run={run} settings={settings} />
        {run.status === 'running' && <button type="button" onClick={cancel}>Cancel the run</button>}
      </p>
      <ErrorLine error={error ?? actionError} />
      <h2>Usage and limits</h2>
      <UsageAndLimits run={run} agent={agent} />
      <h2>Conversation</h2>
      <Conversation input={conversation.input} messages={conversation.messages} toolCalls={run.toolCalls}
        awaitingApproval={awaitingApproval} liveText={liveText} onFork={fork} />
      {run.output !== null && conversation.messages.length === 0 && <LongText text={run.output} />}
      {run.error && <p class="error">{run.error.type}: {run.error.message}</p>}
      {decisions.length > 0 && <Decisions decisions={decisions} />}
    </section>
  );
}

/** Whose run, how it stands and since when; what it waits for, with the way to the inbox. */
function RunStatus({ run, agent }: { run: RunView; agent?: Agent }) {
  const waiting = waitingWords(run);
  return (
    <>
      <p>
        Agent <strong>{agent?.name ?? run.agentId}</strong>; <span class={`status status-${run.status}`}>{run.status}</span>
        {run.stopReason ? ` (${run.stopReason}${run.limitReached ? `: ${run.limitReached}` : ''})` : ''}; started {when(run.createdAt)}
        {run.endedAt ? `, ended ${when(run.endedAt)}` : ''}.
      </p>
      {run.forkedFrom && (
        <p class="forked">
          Forked from <a href={`#/runs/${encodeURIComponent(run.forkedFrom.runId)}`}>run {run.forkedFrom.runId}</a>
          {' '}at turn {run.forkedFrom.turn}: its conversation up to that turn, then its own turns.
        </p>
      )}
      {waiting.length > 0 && <div class="waiting">{waiting.map((w) => <p key={w}>{w} — <a href="#/inbox">decide or answer</a></p>)}</div>}
    </>
  );
}

/** The run's workflow in the Temporal Web UI, when the API names one. */
function TemporalLink({ run, settings }: { run: RunView; settings: ConsoleSettings }) {
  if (!settings.temporalUiUrl) return null;
  const workflow = `${settings.temporalUiUrl}/namespaces/${encodeURIComponent(settings.namespace)}/workflows/${encodeURIComponent(run.id)}`;
  return <ExternalLink href={workflow}>The run in the Temporal Web UI</ExternalLink>;
}

function UsageAndLimits({ run, agent }: { run: RunView; agent?: Agent }) {
  return (
    <dl class="usage">
      <dt>Turns</dt><dd>{run.turns}{agent ? ` of at most ${agent.maxTurns}` : ''}</dd>
      <dt>Tokens</dt><dd>{run.usage.inputTokens} in, {run.usage.outputTokens} out</dd>
      <dt>With sub-agents</dt><dd>{run.usageWithChildren.inputTokens} in, {run.usageWithChildren.outputTokens} out</dd>
      <dt>Cost</dt><dd>{costWords(run.cost)}</dd>
      <dt>With sub-agents</dt><dd>{costWords(run.costWithChildren)}</dd>
      <dt>Tool calls</dt><dd>{run.toolCalls.length}</dd>
      {Object.entries(agent?.limits ?? {}).map(([name, value]) => (
        <Fragment key={name}>
          <dt>{name}</dt><dd>{name === 'maxCostUsd' && typeof value === 'number' ? usd(value) : String(value)}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

/** The priced turns' cost (PRICES_FILE); turns of a model without a price are not counted as zero but said. */
const costWords = (cost: Cost): string => (cost.priced ? usd(cost.usd)
  : cost.usd === 0 ? 'unknown: no price for its model' : `${usd(cost.usd)} (turns of unpriced models not counted)`);

/** The decisions recorded while the page was open. */
function Decisions({ decisions }: { decisions: Decision[] }) {
  return (
    <>
      <h2>Decisions</h2>
      <ul class="decisions">
        {decisions.map((d) => (
          <li key={`${d.toolCallId}-${d.status}`}>
            {d.toolCallId}: {d.status}{d.reason ? ` (“${d.reason}”)` : ''} by {d.by}, keyKind <code>{d.keyKind}</code>
          </li>
        ))}
      </ul>
    </>
  );
}
