import { z } from 'zod';
import { MAX_SUB_AGENTS } from '../../core/sub-agents';
import { runLimitsSchema, type RunLimits } from '../../core/run-limits';
import { modelSchema, type ModelConfig } from '../../core/agent-model';
import { findUnacceptable } from '../storable-text';
import { promptConditionSchema, type PromptWhen } from '../../core/prompt-conditions';
import { DEFAULT_FILE_TENANTS, fileTenantsProblem, type FileTenants } from '../../core/file-tenants';
import { callerToolsSchema } from '../../core/caller-tool-schema';
import type { CallerTool } from '../../core/caller-tools';

/**
 * ChatMD agent files: `<system>`, `<user>` and `<assistant>` blocks, as in ochat, plus one optional
 * `<config>` block holding JSON (model, integrations, promptOrder, promptWhen, subAgents, description,
 * maxTurns, mcpTasks, limits, callerTools, tenants). JSON rather than XML attributes because a model is a nested object
 * (a scripted model carries a whole script).
 *
 * Block bodies are raw text up to the matching close tag: no nesting and no escaping, so a prompt
 * may hold any markup except its own close tag. `<!-- … -->` comments between blocks are ignored.
 */

export interface TemplateMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface AgentFileDefinition {
  description?: string;
  instructions?: string;
  model: ModelConfig;
  /** integration names or ids, resolved when the file is synced */
  integrations: string[];
  /** integration names or ids, each one of `integrations`, whose conventional prompts come first */
  promptOrder: string[];
  /** integration names or ids (each one of `integrations`) to the condition on their optional conventional prompts */
  promptWhen: PromptWhen;
  /** agent names or ids, resolved when the files are synced (sub-agent-sync.ts) */
  subAgents: string[];
  maxTurns?: number;
  /** false: MCP clients never call the agent as a task */
  mcpTasks?: boolean;
  /** the budget of each run (core/run-limits.ts) */
  limits?: RunLimits;
  /** the default caller tools of its runs (docs/agents.md, Caller tools), their names and schemas checked when synced */
  callerTools: CallerTool[];
  template: TemplateMessage[];
  /** the tenants the agent is defined in (core/file-tenants.ts); default `["default"]` */
  tenants: FileTenants;
  /** line of the `<config>` block, for errors found later (unknown integrations) */
  configLine: number;
}

export class AgentFileError extends Error {
  override name = 'AgentFileError';
  constructor(readonly file: string, readonly line: number, detail: string) {
    super(`${file}:${line}: ${detail}`);
  }
}

const configSchema = z.strictObject({
  description: z.string().max(10_000).optional(),
  model: modelSchema,
  integrations: z.array(z.string().min(1)).default([]),
  promptOrder: z.array(z.string().min(1)).max(100).default([]),
  promptWhen: z.record(z.string().min(1).max(128), promptConditionSchema)
    .refine((when) => Object.keys(when).length <= 100, 'at most 100 integrations').default({}),
  subAgents: z.array(z.string().min(1).max(128)).max(MAX_SUB_AGENTS)
    .refine((refs) => new Set(refs).size === refs.length, 'must not name an agent twice').default([]),
  maxTurns: z.number().int().min(1).max(10_000).optional(),
  mcpTasks: z.boolean().optional(),
  limits: runLimitsSchema.optional(),
  callerTools: callerToolsSchema.default([]),
  tenants: z.unknown().optional().superRefine((value, ctx) => {
    const problem = value === undefined ? undefined : fileTenantsProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
});

const TAGS = ['system', 'user', 'assistant', 'config'] as const;
type Tag = (typeof TAGS)[number];

const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** Trims the newline right after an open tag and before a close tag, keeping the author's inner layout. */
const trimBlock = (body: string) => {
  const inner = body.replace(/^[ \t]*\r?\n/, '').replace(/\r?\n[ \t]*$/, '');
  return inner.trim() === '' ? '' : inner;
};

export function parseChatmd(file: string, text: string): AgentFileDefinition {
  const fail = (index: number, detail: string): never => {
    throw new AgentFileError(file, lineAt(text, index), detail);
  };
  // PostgreSQL text cannot hold NUL; such a file is refused here, not by the database mid-sync.
  const nul = text.indexOf('\u0000');
  if (nul >= 0) fail(nul, 'the file contains a NUL byte; agent files are UTF-8 text');
  const blocks: { tag: Tag; body: string; line: number; bodyIndex: number }[] = [];
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const space = /^\s+/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    if (rest.startsWith('<!--')) {
      const end = text.indexOf('-->', i + 4);
      if (end < 0) fail(i, 'unclosed comment "<!--"');
      i = end + 3;
      continue;
    }
    const open = /^<([A-Za-z][\w-]*)\s*>/.exec(rest);
    if (!open) fail(i, `expected <system>, <user>, <assistant> or <config>, found "${rest.split('\n')[0].slice(0, 40)}"`);
    const tag = open![1].toLowerCase();
    if (!(TAGS as readonly string[]).includes(tag)) fail(i, `unknown block <${open![1]}>; use <system>, <user>, <assistant> or <config>`);
    const bodyIndex = i + open![0].length;
    const closeRe = new RegExp(`</${tag}\\s*>`, 'i');
    const close = closeRe.exec(text.slice(bodyIndex));
    if (!close) fail(i, `<${tag}> is never closed (expected </${tag}>)`);
    blocks.push({ tag: tag as Tag, body: text.slice(bodyIndex, bodyIndex + close!.index), line: lineAt(text, i), bodyIndex });
    i = bodyIndex + close!.index + close![0].length;
  }

  const systems = blocks.filter((b) => b.tag === 'system');
  if (systems.length > 1) fail(systems[1].bodyIndex, 'only one <system> block is allowed');
  const configs = blocks.filter((b) => b.tag === 'config');
  if (configs.length > 1) fail(configs[1].bodyIndex, 'only one <config> block is allowed');
  if (configs.length === 0) throw new AgentFileError(file, 1, 'a <config> block with at least {"model": {...}} is required');
  const config = parseConfig(file, text, configs[0]);

  const template = blocks
    .filter((b): b is typeof b & { tag: 'user' | 'assistant' } => b.tag === 'user' || b.tag === 'assistant')
    .map((b) => ({ role: b.tag, content: trimBlock(b.body) }));
  const instructions = systems[0] ? trimBlock(systems[0].body) : undefined;
  return {
    description: config.description, instructions: instructions || undefined, model: config.model,
    integrations: config.integrations, promptOrder: config.promptOrder, promptWhen: config.promptWhen, subAgents: config.subAgents,
    maxTurns: config.maxTurns, mcpTasks: config.mcpTasks, limits: config.limits, callerTools: config.callerTools, template,
    tenants: (config.tenants ?? DEFAULT_FILE_TENANTS) as FileTenants, configLine: configs[0].line,
  };
}

function parseConfig(file: string, text: string, block: { body: string; line: number; bodyIndex: number }): z.infer<typeof configSchema> {
  let json: unknown;
  try {
    json = JSON.parse(block.body);
  } catch (err) {
    // V8 reports "at position N" (Node 20) or "(line L column C)" (Node 22): point at the line either way.
    const message = (err as Error).message;
    const position = /position (\d+)/.exec(message);
    const line = position ? lineAt(text, block.bodyIndex + Number(position[1])) : block.line;
    throw new AgentFileError(file, line, `<config> is not valid JSON: ${message}`);
  }
  const parsed = configSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(config)'}: ${issue.message}`);
    throw new AgentFileError(file, block.line, `invalid <config>: ${issues.join('; ')}`);
  }
  const unacceptable = findUnacceptable(json, '');
  if (unacceptable) throw new AgentFileError(file, block.line, `invalid <config>: ${unacceptable}`);
  return parsed.data;
}

/** `{{input}}` in a template is replaced by the caller's input. */
export const INPUT_PLACEHOLDER = '{{input}}';

/**
 * The conversation an agent call starts from. When the template's last message is a user message
 * holding `{{input}}`, that message (filled in) is the run's input; otherwise the whole template is
 * prior conversation and the input follows it as a new user message.
 */
export function renderTemplate(template: TemplateMessage[], input: string): { history: TemplateMessage[]; input: string } {
  const filled = template.map((m) => ({ role: m.role, content: m.content.split(INPUT_PLACEHOLDER).join(input) }));
  const last = template.at(-1);
  if (last?.role === 'user' && last.content.includes(INPUT_PLACEHOLDER)) {
    return { history: filled.slice(0, -1), input: filled.at(-1)!.content };
  }
  return { history: filled, input };
}
