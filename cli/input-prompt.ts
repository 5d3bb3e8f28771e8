import { ApiError, type ApiClient } from './api-client';
import type { ProgressDisplay } from './progress';

/**
 * A question an MCP server asks during a followed run (`input_requested`): shown, and on a
 * terminal asked field by field and answered through POST /v1/runs/:id/inputs/:inputId. Without a
 * terminal it is only shown, with the way to answer it.
 */

export interface InputPromptContext {
  api: ApiClient;
  err: { write(text: string): unknown };
  interactive: boolean;
  ask(question: string): Promise<string | null>;
}

interface FieldSchema {
  type?: string; title?: string; description?: string; enum?: unknown[]; default?: unknown;
  oneOf?: { const?: unknown; title?: string }[]; items?: { enum?: unknown[] };
}

const ATTEMPTS = 3;

/** The typed value of one answer, or an error to show; empty input leaves the field out. */
function readField(text: string, schema: FieldSchema): { value?: unknown; error?: string } {
  const t = text.trim();
  if (t === '') return {};
  switch (schema.type) {
    case 'boolean':
      if (/^(y|yes|true)$/i.test(t)) return { value: true };
      if (/^(n|no|false)$/i.test(t)) return { value: false };
      return { error: 'answer y or n' };
    case 'integer':
    case 'number': {
      const n = Number(t);
      if (!Number.isFinite(n) || (schema.type === 'integer' && !Number.isInteger(n))) {
        return { error: `answer ${schema.type === 'integer' ? 'an integer' : 'a number'}` };
      }
      return { value: n };
    }
    case 'array':
      return { value: t.split(',').map((s) => s.trim()).filter(Boolean) };
    default:
      return { value: t };
  }
}

function choices(schema: FieldSchema): string {
  const values = schema.enum ?? schema.oneOf?.map((o) => o.const) ?? schema.items?.enum;
  return values ? ` {${values.map(String).join('|')}}` : '';
}

/** What a field's question says of it: its type, choices, whether it is required, its default. */
function fieldHint(field: FieldSchema, required: boolean): string {
  const defaultValue = field.default !== undefined ? `, default ${JSON.stringify(field.default)}` : '';
  return `${field.type ?? 'string'}${choices(field)}${required ? ', required' : ''}${defaultValue}`;
}

async function askForm(ctx: InputPromptContext, schema: Record<string, unknown>): Promise<Record<string, unknown> | null> {
  const properties = (schema.properties ?? {}) as Record<string, FieldSchema>;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const content: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(properties)) {
    const label = `${field.title ?? name}${field.description ? ` (${field.description})` : ''}`;
    const hint = fieldHint(field, required.has(name));
    for (;;) {
      const text = await ctx.ask(`  ${label} [${hint}]: `);
      if (text === null) return null;
      const { value, error } = readField(text, field);
      if (error) {
        ctx.err.write(`  ${error}\n`);
        continue;
      }
      if (value !== undefined) content[name] = value;
      break;
    }
  }
  return content;
}

export async function promptForInput(
  ctx: InputPromptContext, display: ProgressDisplay, runId: string, data: Record<string, unknown>,
): Promise<void> {
  const inputId = String(data.inputId ?? '');
  const path = `/v1/runs/${encodeURIComponent(runId)}/inputs/${encodeURIComponent(inputId)}`;
  display.pause();
  try {
    ctx.err.write(`? the MCP server asks: ${String(data.message ?? '')}\n`);
    if (data.mode === 'url') ctx.err.write(`  open: ${String(data.url ?? '')}\n`);
    if (!ctx.interactive) {
      ctx.err.write(`  answer with POST ${path} {"action": "accept" | "decline" | "cancel", "content"?: {…}}\n`);
      return;
    }
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const choice = await ctx.ask(`  ${data.mode === 'url' ? 'Done' : 'Answer'}? [Y]es / [d]ecline / [c]ancel: `);
      if (choice === null) return;
      const action = /^d/i.test(choice.trim()) ? 'decline' : /^c/i.test(choice.trim()) ? 'cancel' : 'accept';
      let content: Record<string, unknown> | undefined;
      if (action === 'accept' && data.mode !== 'url') {
        const form = await askForm(ctx, (data.requestedSchema ?? {}) as Record<string, unknown>);
        if (form === null) return;
        content = form;
      }
      try {
        await ctx.api.post(path, { action, ...(content ? { content } : {}) });
        ctx.err.write(`  answered (${action})\n`);
        return;
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 400) {
          ctx.err.write(`  could not answer: ${(err as Error).message}\n`);
          return;
        }
        ctx.err.write(`  ${err.message}\n`);
      }
    }
  } finally {
    display.resume();
  }
}
