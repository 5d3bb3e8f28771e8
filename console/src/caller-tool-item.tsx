import { useId, useState } from 'preact/hooks';
import { ApiError, postJson } from './api';
import { schemaFields, type Field } from './schema-form';
import { ErrorLine, LongText, when } from './text';
import type { CallerToolDeclaration, PendingCallerTool } from './types';
import { callerToolWords } from './waiting';

/** A call of a caller tool as the inbox lists it: its run, and the tool as the run declared it (absent: not read). */
export interface WaitingCallerTool extends PendingCallerTool {
  runId: string;
  tool?: CallerToolDeclaration;
}

interface CallerToolItemProps {
  call: WaitingCallerTool;
  /** the result recorded (refused false), or one the API refused because the call no longer waits (409) */
  onAnswered: (words: string, refused: boolean) => void;
}

const record = (value: unknown): Record<string, unknown> =>
  (value && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : {});

/**
 * A call of a tool the run's caller runs, answered by a person: the model's arguments laid out as
 * the form its tool's inputSchema makes (read only: they are the model's), then the result the
 * model reads, as text, and whether it says the call failed. One request to
 * POST /v1/runs/:id/tool-results/:toolCallId.
 */
export function CallerToolItem({ call, onAnswered }: CallerToolItemProps) {
  const [result, setResult] = useState('');
  const [failed, setFailed] = useState(false);
  const [failure, setFailure] = useState<unknown>();
  const formId = useId();
  const { runId } = call;
  const send = (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    const path = `/v1/runs/${encodeURIComponent(runId)}/tool-results/${encodeURIComponent(call.toolCallId)}`;
    const sent = `${call.name} in run ${runId}: the result was sent${failed ? ' (as a failure)' : ''}; the run goes on.`;
    postJson(path, { content: result, ...(failed ? { isError: true } : {}) }).then(() => onAnswered(sent, false), (err: unknown) => {
      // Answered meanwhile (here or elsewhere), timed out, or its run ended: said where it stays in view.
      if (err instanceof ApiError && err.status === 409) onAnswered(`${call.name} in run ${runId}: refused (409): ${err.message}`, true);
      else setFailure(err);
    });
  };
  return (
    <article class="item caller-tool" data-run-id={runId} data-tool-call-id={call.toolCallId}>
      <h2>{callerToolWords(call)}</h2>
      <p>
        Run <a href={`#/runs/${encodeURIComponent(runId)}`}>{runId}</a>; asked {when(call.askedAt)};
        the model is told it was not answered after {when(call.expiresAt)}.
      </p>
      {call.tool?.description && <p class="hint">{call.tool.description}</p>}
      <ArgumentsForm id={formId} args={record(call.arguments)} schema={call.tool?.inputSchema} />
      <form class="tool-result" onSubmit={send} noValidate>
        <label for={`${formId}-result`}>Result (the model reads it)</label>
        <textarea id={`${formId}-result`} name="result" value={result} onInput={(e) => setResult(e.currentTarget.value)} />
        <label class="choice">
          <input type="checkbox" name="isError" checked={failed} onChange={(e) => setFailed(e.currentTarget.checked)} /> The call failed
        </label>
        <button type="submit">Send the result</button>
      </form>
      <ErrorLine error={failure} />
    </article>
  );
}

/** The arguments as the schema's fields, each with its label and description; what the fields do not show, as JSON. */
function ArgumentsForm({ id, args, schema }: { id: string; args: Record<string, unknown>; schema?: Record<string, unknown> }) {
  const fields = schemaFields(schema);
  const shown = new Set(fields.map((f) => f.name));
  const rest = Object.fromEntries(Object.entries(args).filter(([name]) => !shown.has(name)));
  return (
    <fieldset class="arguments" disabled>
      <legend>Arguments</legend>
      {fields.map((field, i) => <ArgumentField key={field.name} id={`${id}-arg-${i}`} field={field} value={args[field.name]} />)}
      {Object.keys(rest).length > 0 && <LongText text={JSON.stringify(rest, null, 2)} label="more arguments" />}
    </fieldset>
  );
}

function ArgumentField({ id, field, value }: { id: string; field: Field; value: unknown }) {
  const text = value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return (
    <div class="field">
      <label for={id}>{field.label}{field.required ? ' (required)' : ''}</label>{' '}
      {field.kind === 'boolean'
        ? <input id={id} name={field.name} type="checkbox" checked={value === true} readOnly />
        : <input id={id} name={field.name} type="text" value={text} readOnly />}
      {field.description && <div class="hint">{field.description}</div>}
    </div>
  );
}
