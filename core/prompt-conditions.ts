import { z } from 'zod';
import type { ModelConfig } from './agent-model';

/**
 * An agent's `promptWhen`: per integration, when its optional conventional prompts are injected.
 * `system_prompt` is the operator's and is injected whatever the condition says: a condition on
 * thread metadata (which callers set) can only add an optional prompt, never remove it.
 */

/** Thread metadata: string keys and string values, at most 4 KiB as JSON. */
export const MAX_METADATA_BYTES = 4096;
const metadataKey = z.string().min(1).max(64).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only');
const metadataValue = z.string().max(1024);

export const threadMetadataSchema = z.record(metadataKey, metadataValue)
  .refine((m) => Object.keys(m).length <= 32, 'at most 32 keys')
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= MAX_METADATA_BYTES, `at most ${MAX_METADATA_BYTES} bytes as JSON`)
  .meta({
    description: 'string keys (1-64 of A-Z a-z 0-9 _ . : -) to string values (up to 1024 characters); '
      + `at most 32 keys and ${MAX_METADATA_BYTES} bytes as JSON`,
  });

export type ThreadMetadata = Record<string, string>;

const modelGlob = z.string().min(1).max(128);

export const promptConditionSchema = z.strictObject({
  models: z.array(modelGlob).min(1).max(20).optional()
    .describe('globs (`*` matches any characters, case-insensitively) on the model\'s name, '
      + 'or `scripted` for the scripted provider; one must match'),
  threadMetadata: z.record(metadataKey, metadataValue).optional()
    .refine((m) => m === undefined || Object.keys(m).length <= 32, 'at most 32 keys')
    .describe('every key must equal the thread\'s metadata value'),
}).refine((c) => c.models !== undefined || c.threadMetadata !== undefined, 'give models, threadMetadata or both');

export type PromptCondition = z.infer<typeof promptConditionSchema>;

/** Integration id (or, in a request, id or name) to its condition. */
export type PromptWhen = Record<string, PromptCondition>;

/** The name a `models` glob is matched against: the model's `name`, or `scripted` for the scripted provider. */
export function conditionModelName(model: ModelConfig): string {
  return model.provider === 'scripted' ? 'scripted' : model.name;
}

/** `*` matches any run of characters (none too); everything else matches itself, case-insensitively. Linear, no regular expression. */
export function globMatches(glob: string, text: string): boolean {
  const g = glob.toLowerCase();
  const t = text.toLowerCase();
  let gi = 0;
  let ti = 0;
  let star = -1;
  let mark = 0;
  while (ti < t.length) {
    if (gi < g.length && g[gi] !== '*' && g[gi] === t[ti]) {
      gi++;
      ti++;
    } else if (gi < g.length && g[gi] === '*') {
      star = gi++;
      mark = ti;
    } else if (star >= 0) {
      gi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (gi < g.length && g[gi] === '*') gi++;
  return gi === g.length;
}

export interface ConditionOutcome {
  met: boolean;
  /** why, in words for the context preview */
  reason: string;
}

/** Whether an integration's condition holds for this model and thread metadata (none: no thread). */
export function evaluateCondition(
  condition: PromptCondition | undefined, model: ModelConfig, metadata: ThreadMetadata | undefined,
): ConditionOutcome {
  if (!condition) return { met: true, reason: 'no condition' };
  const reasons: string[] = [];
  if (condition.models) {
    const name = conditionModelName(model);
    const glob = condition.models.find((g) => globMatches(g, name));
    if (!glob) return { met: false, reason: `model ${name} matches none of ${condition.models.join(', ')}` };
    reasons.push(`model ${name} matches ${glob}`);
  }
  for (const [key, value] of Object.entries(condition.threadMetadata ?? {})) {
    if (!metadata) return { met: false, reason: `thread metadata ${key} is required and no thread was given` };
    const wanted = JSON.stringify(value);
    if (!Object.hasOwn(metadata, key)) return { met: false, reason: `thread metadata ${key} is not set (${wanted} required)` };
    if (metadata[key] !== value) return { met: false, reason: `thread metadata ${key} is ${JSON.stringify(metadata[key])}, not ${wanted}` };
    reasons.push(`thread metadata ${key} is ${JSON.stringify(value)}`);
  }
  return { met: true, reason: reasons.join('; ') };
}

/** The entries still among the agent's integrations (after its integrations changed). */
export function promptWhenWithin(promptWhen: PromptWhen, integrationIds: readonly string[]): PromptWhen {
  return Object.fromEntries(Object.entries(promptWhen).filter(([id]) => integrationIds.includes(id)));
}
