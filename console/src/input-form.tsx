import { useState } from 'preact/hooks';
import { postJson } from './api';
import { checkAnswers, schemaFields, type Field } from './schema-form';
import { ErrorLine, ExternalLink } from './text';
import type { PendingInput } from './types';

/** An MCP server's question: a form made from its requestedSchema, or (url mode) the address to complete it at. */
export function InputForm({ runId, input, onAnswered }: { runId: string; input: PendingInput; onAnswered: (status: string) => void }) {
  const fields = schemaFields(input.requestedSchema);
  const [values, setValues] = useState<Record<string, string | boolean>>(() => Object.fromEntries(fields.map((f) => [
    f.name, f.kind === 'boolean' ? f.defaultValue === true : f.defaultValue === undefined ? '' : String(f.defaultValue),
  ])));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<unknown>();
  const url = `/v1/runs/${encodeURIComponent(runId)}/inputs/${encodeURIComponent(input.inputId)}`;
  const send = (body: Record<string, unknown>) => postJson(url, body).then(() => onAnswered(String(body.action)), setFailure);

  const submit = (event: Event) => {
    event.preventDefault();
    if (input.mode === 'url') return void send({ action: 'accept' });
    const checked = checkAnswers(fields, values);
    setErrors(checked.errors);
    if (checked.content) void send({ action: 'accept', content: checked.content });
  };

  return (
    <form class="input-form" onSubmit={submit} noValidate>
      {input.mode === 'url' && input.url && <p>Complete it at <ExternalLink href={input.url} />, then say it is done.</p>}
      {fields.map((field) => (
        <FieldInput key={field.name} field={field} value={values[field.name]} error={errors[field.name]}
          onChange={(value) => setValues({ ...values, [field.name]: value })} />
      ))}
      <ErrorLine error={failure} />
      <button type="submit">{input.mode === 'url' ? 'Done' : 'Send the answer'}</button>
      <button type="button" onClick={() => void send({ action: 'decline' })}>Decline</button>
      <button type="button" onClick={() => void send({ action: 'cancel' })}>Cancel</button>
    </form>
  );
}

function FieldInput({ field, value, error, onChange }: { field: Field; value: string | boolean | undefined; error?: string; onChange: (value: string | boolean) => void }) {
  const id = `field-${field.name}`;
  const label = <>{field.label}{field.required ? ' (required)' : ''}</>;
  let control;
  if (field.kind === 'boolean') {
    control = <input id={id} name={field.name} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
  } else if (field.kind === 'choice') {
    control = (
      <select id={id} name={field.name} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">—</option>
        {field.choices?.map((c) => <option key={c.value} value={c.value}>{c.label}</option>)}
      </select>
    );
  } else {
    // Text inputs all: the page's own check (schema-form.ts) says what is wrong, in words, before the API checks again.
    control = <input id={id} name={field.name} type="text" inputMode={field.kind === 'text' ? undefined : 'decimal'} value={String(value ?? '')} onInput={(e) => onChange(e.currentTarget.value)} />;
  }
  return (
    <div class="field">
      <label for={id}>{label}</label> {control}
      {field.description && <div class="hint">{field.description}</div>}
      {error && <div class="error" role="alert">{field.label}: {error}</div>}
    </div>
  );
}
