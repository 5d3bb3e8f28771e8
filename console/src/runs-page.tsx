import { useState } from 'preact/hooks';
import { getJson } from './api';
import { useLoad } from './hooks';
import { ErrorLine, when } from './text';
import type { Agent, RunStatus, RunSummary, RunView } from './types';
import { waitingWords } from './waiting';

/** How often the list is read again; it is read again too when the tab comes back into view. */
const REFRESH_MS = 3000;
/** At most this many waiting or running runs are read in full, to say in words what each waits for. */
const MAX_WAITING_READ = 30;

interface Filters { agentId: string; status: '' | RunStatus; waiting: boolean }

interface RunsData { runs: RunSummary[]; waiting: Map<string, string[]>; agents: Agent[] }

async function loadRuns(filters: Filters, signal: AbortSignal): Promise<RunsData> {
  const query = new URLSearchParams({ limit: '50' });
  if (filters.agentId) query.set('agentId', filters.agentId);
  if (filters.status) query.set('status', filters.status);
  if (filters.waiting) query.set('waiting', 'true');
  const waitingQuery = new URLSearchParams({ waiting: 'true', limit: String(MAX_WAITING_READ) });
  const [list, waitingList, agents] = await Promise.all([
    getJson<{ runs: RunSummary[] }>(`/v1/runs?${query}`, signal),
    getJson<{ runs: RunSummary[] }>(`/v1/runs?${waitingQuery}`, signal),
    getJson<{ agents: Agent[] }>('/v1/agents', signal),
  ]);
  // Listed as waiting, or running on this page: a server's question asked within its request waits
  // inside the tool call, where the run's waiting attribute does not see it.
  const candidates = [...waitingList.runs, ...list.runs.filter((r) => r.status === 'running')];
  const toRead = [...new Set(candidates.map((r) => r.id))].slice(0, MAX_WAITING_READ);
  const waitingRuns = await Promise.all(toRead.map((id) => getJson<RunView>(`/v1/runs/${encodeURIComponent(id)}`, signal)
    .catch(() => undefined)));
  const waiting = new Map<string, string[]>();
  for (const run of waitingRuns) if (run && waitingWords(run).length > 0) waiting.set(run.id, waitingWords(run));
  return { runs: list.runs, waiting, agents: agents.agents };
}

export function RunsPage() {
  const [filters, setFilters] = useState<Filters>({ agentId: '', status: '', waiting: false });
  const { data, error } = useLoad((signal) => loadRuns(filters, signal), [filters.agentId, filters.status, filters.waiting], REFRESH_MS);
  return (
    <section>
      <h1>Runs</h1>
      <WaitingSummary waitingCount={data?.waiting.size} />
      <RunFilters filters={filters} agents={data?.agents} onChange={setFilters} />
      <ErrorLine error={error} />
      {data && data.runs.length === 0 && <p>No runs match.</p>}
      {data && data.runs.length > 0 && <RunTable data={data} />}
    </section>
  );
}

/** How many runs wait for a person (undefined: not read yet), with the way to the inbox. */
function WaitingSummary({ waitingCount }: { waitingCount?: number }) {
  const runs = waitingCount === 1 ? '1 run waits for a person' : `${waitingCount} runs wait for a person`;
  return (
    <p class="summary" data-testid="waiting-summary">
      {waitingCount === undefined ? 'Loading…' : waitingCount === 0 ? 'No run waits for a person.'
        : <>{runs}: <a href="#/inbox">decide or answer</a>.</>}
    </p>
  );
}

interface RunFiltersProps { filters: Filters; agents?: Agent[]; onChange: (filters: Filters) => void }

function RunFilters({ filters, agents, onChange }: RunFiltersProps) {
  const change = (changed: Partial<Filters>) => onChange({ ...filters, ...changed });
  return (
    <form class="filters" onSubmit={(e) => e.preventDefault()}>
      <label>Agent <select value={filters.agentId} onChange={(e) => change({ agentId: e.currentTarget.value })}>
        <option value="">all</option>
        {agents?.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
      </select></label>
      <label>Status <select value={filters.status} onChange={(e) => change({ status: e.currentTarget.value as Filters['status'] })}>
        <option value="">all</option>
        {(['running', 'completed', 'failed', 'cancelled'] as const).map((s) => <option key={s} value={s}>{s}</option>)}
      </select></label>
      <label>
        <input type="checkbox" checked={filters.waiting} onChange={(e) => change({ waiting: e.currentTarget.checked })} />
        {' '}waiting for a person only
      </label>
    </form>
  );
}

function RunTable({ data }: { data: RunsData }) {
  const agentName = (id: string) => data.agents.find((a) => a.id === id)?.name ?? id;
  return (
    <table class="runs">
      <thead><tr><th>Run</th><th>Agent</th><th>Status</th><th>Turns</th><th>Waiting for</th><th>Started</th></tr></thead>
      <tbody>
        {data.runs.map((run) => (
          <tr key={run.id} data-run-id={run.id}>
            <td><a href={`#/runs/${encodeURIComponent(run.id)}`}>{run.id}</a></td>
            <td>{agentName(run.agentId)}</td>
            <td><span class={`status status-${run.status}`}>{run.status}</span>{run.stopReason ? ` (${run.stopReason})` : ''}</td>
            <td>{run.turns ?? ''}</td>
            <td class="waiting">{(data.waiting.get(run.id) ?? []).map((words) => <div key={words}>{words}</div>)}</td>
            <td>{when(run.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
