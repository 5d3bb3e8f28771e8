/**
 * A server's requestedSchema (MCP elicitation: a flat object of primitive fields) as form fields,
 * and the page's own check of the answers. The API checks them again; this one only spares a
 * round trip. Titles, descriptions and enum names are the server's: shown as text only.
 */

export interface Field {
  name: string; label: string; description?: string; required: boolean;
  kind: 'text' | 'number' | 'integer' | 'boolean' | 'choice';
  choices?: { value: string; label: string }[];
  minLength?: number; maxLength?: number; minimum?: number; maximum?: number; format?: string; defaultValue?: unknown;
}

const record = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : {});
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
      format: str(p.format), defaultValue: p.default,
    };
    const choices = choicesOf(p);
    if (choices) return { ...base, kind: 'choice' as const, choices };
    if (p.type === 'boolean') return { ...base, kind: 'boolean' as const };
    if (p.type === 'integer') return { ...base, kind: 'integer' as const };
    if (p.type === 'number') return { ...base, kind: 'number' as const };
    return { ...base, kind: 'text' as const };
  });
}

function choicesOf(p: Record<string, unknown>): Field['choices'] {
  if (Array.isArray(p.enum)) {
    const names = Array.isArray(p.enumNames) ? p.enumNames : [];
    return p.enum.map((v, i) => ({ value: String(v), label: str(names[i]) ?? String(v) }));
  }
  if (Array.isArray(p.oneOf)) {
    return p.oneOf.map(record).filter((o) => o.const !== undefined).map((o) => ({ value: String(o.const), label: str(o.title) ?? String(o.const) }));
  }
  return undefined;
}

/** The content to send from the form's text values, or the fields' errors. */
export function checkAnswers(fields: Field[], values: Record<string, string | boolean>): { content?: Record<string, unknown>; errors: Record<string, string> } {
  const content: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (field.kind === 'boolean') {
      content[field.name] = value === true;
      continue;
    }
    const text = typeof value === 'string' ? value : '';
    if (text === '') {
      if (field.required) errors[field.name] = 'required';
      continue;
    }
    const error = fieldError(field, text);
    if (error) errors[field.name] = error;
    else content[field.name] = field.kind === 'number' || field.kind === 'integer' ? Number(text) : text;
  }
  return Object.keys(errors).length > 0 ? { errors } : { content, errors };
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
  if (field.format === 'email' && !/^[^@\s]+@[^@\s]+$/.test(text)) return 'must be an email address';
  if (field.format === 'uri' && !/^[a-z][a-z0-9+.-]*:/i.test(text)) return 'must be a URI';
  if (field.format === 'date' && !/^\d{4}-\d{2}-\d{2}$/.test(text)) return 'must be a date (YYYY-MM-DD)';
  return undefined;
}
