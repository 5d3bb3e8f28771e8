import { useId, useState } from 'preact/hooks';
import { ApiError, postJson } from './api';
import {
  addedWords, budgetWords, checkRaise, count, LIMIT_WORDS, limitValue, raisableSet, raiseSuggestion, usd,
  type BudgetAdd, type Raisable,
} from './budget';
import { withAdminKey } from './prompts';
import { ErrorLine, when } from './text';
import type { PendingBudget, RunView } from './types';

/** At most this many tool names are listed for what a run spent on; its page lists every call. */
const NAMES_SHOWN = 5;

/** A run's request for budget as the inbox lists it, with what the run's own turns went on. */
export interface WaitingBudget extends PendingBudget {
  runId: string;
  turns: number;
  /** the run's own tool calls by name, most first */
  toolCalls: [name: string, calls: number][];
  /** false: a turn's model had no price, its cost is not in the spent figure */
  priced: boolean;
}

export function waitingBudget(run: RunView, budget: PendingBudget): WaitingBudget {
  const calls = new Map<string, number>();
  for (const call of run.toolCalls) calls.set(call.name, (calls.get(call.name) ?? 0) + 1);
  const toolCalls = [...calls].sort((a, b) => b[1] - a[1]);
  return { ...budget, runId: run.id, turns: run.turns, toolCalls, priced: run.costWithChildren.priced };
}

interface BudgetItemProps {
  budget: WaitingBudget;
  /** the answer recorded (refused false), or one the API refused because the request is no longer open (409) */
  onAnswered: (words: string, refused: boolean) => void;
}

/**
 * A run waiting for budget: what it reached, spent and on what, and the limits as they stood; a
 * raise (role manage) or a stop (role decide), each one request to POST /v1/runs/:id/budget.
 */
export function BudgetItem({ budget, onAnswered }: BudgetItemProps) {
  const [values, setValues] = useState(() => raiseSuggestion(budget));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<unknown>();
  const formId = useId();
  const { runId } = budget;
  const answer = (body: { add: BudgetAdd } | { stop: true }, words: string) => {
    setFailure(undefined);
    withAdminKey((key) => postJson(`/v1/runs/${encodeURIComponent(runId)}/budget`, body, key))
      .then(() => onAnswered(words, false), (err: unknown) => {
        // Answered meanwhile (here or elsewhere), timed out or ended: the request is gone, said where it stays in view.
        if (err instanceof ApiError && err.status === 409) {
          onAnswered(`Run ${runId}: refused, the request is no longer open (409): ${err.message}`, true);
        } else setFailure(err instanceof ApiError && err.status === 403 ? new Error(`Refused (403): ${err.message}`) : err);
      });
  };
  const raise = (event: Event) => {
    event.preventDefault();
    const checked = checkRaise(budget.limits, values);
    setErrors(checked.errors);
    if (checked.add) answer({ add: checked.add }, `Run ${runId}: budget raised (${addedWords(checked.add)}); the run goes on.`);
  };
  return (
    <article class="item budget" data-run-id={runId}>
      <h2>{budgetWords(budget)}</h2>
      <p>
        Run <a href={`#/runs/${encodeURIComponent(runId)}`}>{runId}</a>; asked {when(budget.requestedAt)};
        stopped (stopReason budget) unless answered by {when(budget.expiresAt)}.
      </p>
      <Spent budget={budget} />
      <form class="raise" onSubmit={raise} noValidate>
        {raisableSet(budget.limits).map((name) => (
          <RaiseField key={name} id={`${formId}-${name}`} name={name} limit={budget.limits[name]!} value={values[name] ?? ''}
            error={errors[name]} onChange={(value) => setValues((now) => ({ ...now, [name]: value }))} />
        ))}
        {errors.form && <p class="error" role="alert">{errors.form}</p>}
        <button type="submit">Raise the limits</button>
        <button type="button" onClick={() => answer({ stop: true }, `Run ${runId} was stopped (stopReason budget).`)}>Stop the run</button>
      </form>
      <ErrorLine error={failure} />
    </article>
  );
}

/** What the run (its sub-agents included) had spent, each against its limit as it stood, and what its own turns went on. */
function Spent({ budget }: { budget: WaitingBudget }) {
  const figures: [Raisable, string][] = [
    ['maxCostUsd', `${usd(budget.spent.costUsd)}${budget.priced ? '' : ' (turns of unpriced models not counted)'}`],
    ['maxInputTokens', count(budget.spent.inputTokens)],
    ['maxOutputTokens', count(budget.spent.outputTokens)],
    ['maxToolCalls', count(budget.spent.toolCalls)],
  ];
  const names = budget.toolCalls.slice(0, NAMES_SHOWN).map(([name, calls]) => `${name} ×${calls}`);
  const more = budget.toolCalls.length > NAMES_SHOWN ? `, and ${budget.toolCalls.length - NAMES_SHOWN} other tools` : '';
  return (
    <dl class="usage budget-spent">
      {figures.map(([name, spent]) => {
        const limit = budget.limits[name];
        return [
          <dt key={`${name}-t`}>Spent: {LIMIT_WORDS[name]}</dt>,
          <dd key={`${name}-d`} data-limit={name}>{spent}{limit === undefined ? '' : ` (limit ${limitValue(name, limit)})`}</dd>,
        ];
      })}
      <dt>Spent on</dt>
      <dd>
        {budget.turns} turn(s) of its own{names.length > 0 ? `; tool calls: ${names.join(', ')}${more}` : '; no tool calls'} —{' '}
        <a href={`#/runs/${encodeURIComponent(budget.runId)}`}>its turns and tool calls</a>
      </dd>
    </dl>
  );
}

interface RaiseFieldProps { id: string; name: Raisable; limit: number; value: string; error?: string; onChange: (value: string) => void }

function RaiseField({ id, name, limit, value, error, onChange }: RaiseFieldProps) {
  return (
    <div class="field">
      <label for={id}>Add to {name} ({LIMIT_WORDS[name]}; now {limitValue(name, limit)})</label>{' '}
      <input id={id} name={name} type="text" inputMode={name === 'maxCostUsd' ? 'decimal' : 'numeric'} autocomplete="off"
        value={value} onInput={(e) => onChange(e.currentTarget.value)} />
      {error && <div class="error" role="alert">{name}: {error}</div>}
    </div>
  );
}
