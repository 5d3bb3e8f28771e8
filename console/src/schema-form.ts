/**
 * A server's requestedSchema (MCP elicitation: a flat object of primitive fields) as form fields,
 * and the page's own check of the answers. The API checks them again (ajv with its full formats,
 * use-cases/runs/elicitation-content.ts); this one only spares a round trip and says what is wrong
 * in words. Titles, descriptions and enum names are the server's: shown as text only.
 *
 * The kinds MCP allows (spec 2025-11-25, ElicitRequest's PrimitiveSchemaDefinition): a string
 * (minLength, maxLength, format email | uri | date | date-time), a number or integer (minimum,
 * maximum), a boolean, a single choice (enum, with enumNames, or oneOf of {const, title}) and a
 * multi-select (type array, items an enum or anyOf of {const, title}, minItems, maxItems); each
 * with a default. Anything else is 'unsupported': shown as such, never sent.
 */

export interface Field {
  name: string; label: string; description?: string; required: boolean;
  kind: 'text' | 'number' | 'integer' | 'boolean' | 'choice' | 'choices' | 'unsupported';
  choices?: { value: string; label: string }[];
  minLength?: number; maxLength?: number; minimum?: number; maximum?: number; minItems?: number; maxItems?: number;
  format?: string; defaultValue?: unknown;
}

/** A field's value in the form: text for most, a boolean for yes/no, the chosen values of a multi-select. */
export type FieldValue = string | boolean | string[];

const record = (value: unknown): Record<string, unknown> =>
  (value && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : {});
const num = (value: unknown) => (typeof value === 'number' ? value : undefined);
const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

export function schemaFields(schema: Record<string, unknown> | undefined): Field[] {
  const properties = record(schema?.properties);
  const required = new Set(Array.isArray(schema?.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  return Object.entries(properties).map(([name, raw]) => {
    const p = record(raw);
    const base = {
      name, label: str(p.title) ?? name, description: str(p.description), required: required.has(name),
      minLength: num(p.minLength), maxLength: num(p.maxLength), minimum: num(p.minimum), maximum: num(p.maximum),
      minItems: num(p.minItems), maxItems: num(p.maxItems), format: str(p.format), defaultValue: p.default,
    };
    if (p.type === 'array') {
      const choices = choicesOf(record(p.items));
      return choices ? { ...base, kind: 'choices' as const, choices } : { ...base, kind: 'unsupported' as const };
    }
    const choices = choicesOf(p);
    if (choices) return { ...base, kind: 'choice' as const, choices };
    if (p.type === 'boolean') return { ...base, kind: 'boolean' as const };
    if (p.type === 'integer') return { ...base, kind: 'integer' as const };
    if (p.type === 'number') return { ...base, kind: 'number' as const };
    return p.type === 'string' || p.type === undefined ? { ...base, kind: 'text' as const } : { ...base, kind: 'unsupported' as const };
  });
}

/** A single choice's options (enum with enumNames, or oneOf), or a multi-select's items' (enum, or anyOf). */
function choicesOf(p: Record<string, unknown>): Field['choices'] {
  if (Array.isArray(p.enum)) {
    const names = Array.isArray(p.enumNames) ? p.enumNames : [];
    return p.enum.map((v, i) => ({ value: String(v), label: str(names[i]) ?? String(v) }));
  }
  const titled = Array.isArray(p.oneOf) ? p.oneOf : Array.isArray(p.anyOf) ? p.anyOf : undefined;
  return titled?.map(record).filter((o) => o.const !== undefined)
    .map((o) => ({ value: String(o.const), label: str(o.title) ?? String(o.const) }));
}

/** The form's first values: the server's defaults where it gave them. */
export function initialValues(fields: Field[]): Record<string, FieldValue> {
  return Object.fromEntries(fields.map((f): [string, FieldValue] => {
    const given = f.defaultValue;
    if (f.kind === 'boolean') return [f.name, given === true];
    if (f.kind === 'choices') {
      return [f.name, Array.isArray(given) ? given.map(String).filter((v) => f.choices?.some((c) => c.value === v)) : []];
    }
    if (given === undefined || given === null || typeof given === 'object') return [f.name, ''];
    return [f.name, f.format === 'date-time' ? localDateTime(String(given)) : String(given)];
  }));
}

/** The content to send from the form's values, or the fields' errors. */
export function checkAnswers(
  fields: Field[], values: Record<string, FieldValue | undefined>,
): { content?: Record<string, unknown>; errors: Record<string, string> } {
  const content: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const answer = answerOf(field, values[field.name]);
    if ('error' in answer) errors[field.name] = answer.error;
    else if (answer.value !== undefined) content[field.name] = answer.value;
  }
  return Object.keys(errors).length > 0 ? { errors } : { content, errors };
}

/** One field's value as the schema types it (undefined: left out), or what is wrong with it. */
function answerOf(field: Field, value: FieldValue | undefined): { value?: unknown } | { error: string } {
  if (field.kind === 'boolean') return { value: value === true };
  if (field.kind === 'unsupported') return field.required ? { error: 'the console cannot show this field: decline or cancel' } : {};
  if (field.kind === 'choices') return chosen(field, Array.isArray(value) ? value : []);
  const text = typeof value === 'string' ? value : '';
  if (text === '') return field.required ? { error: 'required' } : {};
  const error = fieldError(field, text);
  if (error) return { error };
  if (field.kind === 'number' || field.kind === 'integer') return { value: Number(text) };
  return { value: field.format === 'date-time' ? new Date(text).toISOString() : text };
}

function chosen(field: Field, picked: string[]): { value?: string[] } | { error: string } {
  const choices = field.choices ?? [];
  if (picked.some((v) => !choices.some((c) => c.value === v))) return { error: 'must be among the choices' };
  // An optional multi-select left empty is not answered (an empty array may be below its minItems).
  if (picked.length === 0 && !field.required) return {};
  if (picked.length === 0 && field.minItems === undefined) return { error: 'required' };
  if (field.minItems !== undefined && picked.length < field.minItems) return { error: `choose at least ${field.minItems}` };
  if (field.maxItems !== undefined && picked.length > field.maxItems) return { error: `choose at most ${field.maxItems}` };
  return { value: choices.map((c) => c.value).filter((v) => picked.includes(v)) };
}

function fieldError(field: Field, text: string): string | undefined {
  if (field.kind === 'number' || field.kind === 'integer') {
    const n = Number(text);
    if (!Number.isFinite(n)) return 'must be a number';
    if (field.kind === 'integer' && !Number.isInteger(n)) return 'must be a whole number';
    if (field.minimum !== undefined && n < field.minimum) return `must be at least ${field.minimum}`;
    if (field.maximum !== undefined && n > field.maximum) return `must be at most ${field.maximum}`;
    return undefined;
  }
  if (field.kind === 'choice') return field.choices?.some((c) => c.value === text) ? undefined : 'must be one of the choices';
  if (field.minLength !== undefined && text.length < field.minLength) return `must be at least ${field.minLength} characters`;
  if (field.maxLength !== undefined && text.length > field.maxLength) return `must be at most ${field.maxLength} characters`;
  if (field.format === 'email' && !/^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$/.test(text)) return 'must be an email address';
  if (field.format === 'uri' && !/^[a-z][a-z0-9+.-]*:\S*$/i.test(text)) return 'must be a URI';
  if (field.format === 'date' && !isDate(text)) return 'must be a date (YYYY-MM-DD)';
  if (field.format === 'date-time' && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) return 'must be a date and time';
  if (field.format === 'date-time' && !isDate(text.slice(0, 10))) return 'must be a date and time';
  return undefined;
}

/** A calendar date that exists (2024-02-29, not 2023-02-30), as the API's check wants. */
function isDate(text: string): boolean {
  const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!parts) return false;
  const [year, month, day] = parts.slice(1).map(Number);
  const at = new Date(Date.UTC(year, month - 1, day));
  return at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === day;
}

/**
 * An RFC 3339 date-time as a datetime-local control shows it: in the page's time zone, to the
 * minute, or to the second when it has seconds. What the control gives back goes out in UTC.
 */
function localDateTime(text: string): string {
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  const day = `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}`;
  return `${day}T${two(at.getHours())}:${two(at.getMinutes())}${at.getSeconds() ? `:${two(at.getSeconds())}` : ''}`;
}
