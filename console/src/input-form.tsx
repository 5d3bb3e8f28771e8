import type { InputHTMLAttributes } from 'preact';
import { useId, useState } from 'preact/hooks';
import { postJson } from './api';
import { checkAnswers, initialValues, schemaFields, type Field, type FieldValue } from './schema-form';
import { ErrorLine, ExternalLink } from './text';
import type { PendingInput } from './types';

interface InputFormProps { runId: string; input: PendingInput; onAnswered: (status: string) => void }

/**
 * An MCP server's question: a form made from its requestedSchema, or (url mode) the address to
 * complete it at.
 */
export function InputForm({ runId, input, onAnswered }: InputFormProps) {
  const fields = schemaFields(input.requestedSchema);
  const [values, setValues] = useState<Record<string, FieldValue>>(() => initialValues(fields));
  // Ids unique on the page: the inbox shows several questions, whose fields may share names.
  const formId = useId();
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
      {fields.map((field, index) => (
        <FieldInput key={field.name} id={`${formId}-${index}`} field={field} value={values[field.name]} error={errors[field.name]}
          onChange={(value) => setValues((now) => ({ ...now, [field.name]: value }))} />
      ))}
      <ErrorLine error={failure} />
      <button type="submit">{input.mode === 'url' ? 'Done' : 'Send the answer'}</button>
      <button type="button" onClick={() => void send({ action: 'decline' })}>Decline</button>
      <button type="button" onClick={() => void send({ action: 'cancel' })}>Cancel</button>
    </form>
  );
}

const INPUT_TYPES: Partial<Record<string, 'email' | 'url' | 'date' | 'datetime-local'>> = {
  email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local',
};

interface FieldProps { id: string; field: Field; value: FieldValue | undefined; error?: string; onChange: (value: FieldValue) => void }

/** One field: a control of its kind, its label, the server's description and the page's error. */
function FieldInput(props: FieldProps) {
  const { id, field, error } = props;
  const label = <>{field.label}{field.required ? ' (required)' : ''}</>;
  const hint = field.description && <div class="hint">{field.description}</div>;
  const problem = error && <div class="error" role="alert">{field.label}: {error}</div>;
  if (field.kind === 'choices') {
    return <fieldset class="field choices"><legend>{label}</legend><Choices {...props} />{hint}{problem}</fieldset>;
  }
  return (
    <div class="field">
      <label for={id}>{label}</label> <Control {...props} />
      {hint}{problem}
    </div>
  );
}

function Control({ id, field, value, onChange }: FieldProps) {
  if (field.kind === 'boolean') {
    return <input id={id} name={field.name} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
  }
  if (field.kind === 'choice') {
    return (
      <select id={id} name={field.name} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">—</option>
        {field.choices?.map((c) => <option key={c.value} value={c.value}>{c.label}</option>)}
      </select>
    );
  }
  if (field.kind === 'unsupported') {
    return <span id={id} class="refused">This field's kind is not one MCP questions may ask; the console cannot answer it.</span>;
  }
  // Numbers in text inputs: the page's own check (schema-form.ts) says what is wrong, in words,
  // where a number input would hand back an empty value for what it cannot read.
  const type = (field.format ? INPUT_TYPES[field.format] : undefined) ?? 'text';
  const inputMode = field.kind === 'integer' ? 'numeric' : field.kind === 'number' ? 'decimal' : undefined;
  // Preact types each input type's attributes apart; this one's are valid for all five.
  const attributes = { id, name: field.name, type, inputMode, value: String(value ?? '') } as InputHTMLAttributes<HTMLInputElement>;
  return <input {...attributes} onInput={(e) => onChange(e.currentTarget.value)} />;
}

/** A multi-select: one checkbox per choice, the chosen values kept in the choices' order by the check. */
function Choices({ id, field, value, onChange }: FieldProps) {
  const picked = Array.isArray(value) ? value : [];
  const toggle = (choice: string, on: boolean) => {
    const others = picked.filter((v) => v !== choice);
    onChange(on ? [...others, choice] : others);
  };
  return (
    <>
      {field.choices?.map((c, i) => (
        <label key={c.value} class="choice">
          <input id={`${id}-${i}`} name={field.name} type="checkbox" value={c.value} checked={picked.includes(c.value)}
            onChange={(e) => toggle(c.value, e.currentTarget.checked)} /> {c.label}
        </label>
      ))}
    </>
  );
}
