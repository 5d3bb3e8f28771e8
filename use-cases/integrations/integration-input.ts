import { z } from 'zod';
import { parseApprovalTimeout, type ApprovalPolicy } from '../../core/approval';
import { CONCURRENT_CALLS, MAX_TASK_TIMEOUT_MS, SIZE_BOUNDS, TASK_QUEUE_PATTERN, type IntegrationTransport } from '../../core/integration';
import { PROTOCOL_CHOICES } from '../../core/protocol-era';
import { SAMPLING_MODES } from '../../core/sampling';
import { DURATION_PATTERN, parseDuration } from '../../core/duration';
import { EngineError } from '../../core/engine-error';
import { describeIssues, formatPath } from '../validation';

/**
 * The transport of an integration, checked with zod for messages that name the field. No message
 * here may quote a value: env and header values are secrets, and a 400 must not echo them.
 */

// spawn() rejects NUL bytes, and "=" would split the variable; fetch() rejects CR/LF in headers.
const envName = z.string().min(1).max(256).regex(/^[^=\0]+$/, 'must not contain "=" or NUL');
const headerName = z.string().min(1).max(256).regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name');
const envValue = z.string().max(65_536).refine((v) => !v.includes('\0'), 'must not contain NUL');
const headerValue = z.string().max(16_384).refine((v) => !/[\r\n\0]/.test(v), 'must not contain CR, LF or NUL');

export const stdioTransportSchema = z.strictObject({
  type: z.literal('stdio'),
  command: z.string().min(1).max(4096),
  args: z.array(z.string().max(65_536)).max(1000).optional(),
  env: z.record(envName, envValue).optional(),
  cwd: z.string().min(1).max(4096).optional(),
});

const oauthSchema = z.strictObject({
  type: z.literal('oauth'),
  scopes: z.array(z.string().min(1).max(256).regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be an OAuth scope token')).max(100).optional(),
  clientId: z.string().min(1).max(1024).optional(),
  clientSecret: z.string().min(1).max(4096).optional(),
  clientMetadataUrl: z.url({ protocol: /^https$/, error: 'must be an https URL' }).max(2048).optional(),
}).refine((a) => !a.clientSecret || a.clientId, { message: 'clientSecret needs clientId', path: ['clientSecret'] });

export const httpTransportSchema = z.strictObject({
  type: z.literal('http'),
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(8192),
  headers: z.record(headerName, headerValue).optional(),
  auth: oauthSchema.optional(),
});

export const transportSchema = z.discriminatedUnion('type', [stdioTransportSchema, httpTransportSchema]);

export function parseTransport(value: unknown, path: PropertyKey[] = ['body', 'transport']): IntegrationTransport {
  const parsed = transportSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new EngineError('validation', `Invalid transport: ${describeIssues(parsed.error.issues, path).join('; ')}`);
}

/**
 * A PATCH's transport: of the same type (or without one), the given fields replace the stored
 * ones and the rest stay (so env and headers survive a changed command or URL); `cwd: null`
 * removes the directory. Of another type, it must be a complete transport.
 */
export function patchTransport(current: IntegrationTransport, patch: Record<string, unknown>): IntegrationTransport {
  const type = patch.type ?? current.type;
  const merged: Record<string, unknown> = type === current.type ? { ...current, ...patch, type } : { ...patch };
  if (merged.cwd === null) delete merged.cwd;
  return parseTransport(merged);
}


const approvalRule = z.enum(['never', 'always']);

/** An integration's approval policy (core/approval.ts), as the API and imports accept it. */
export const approvalPolicySchema = z.strictObject({
  default: z.enum(['never', 'always', 'unless_read_only']),
  tools: z.record(z.string().min(1).max(256), approvalRule).refine((t) => Object.keys(t).length <= 1000, 'at most 1000 tools').optional(),
  timeout: z.string().max(16).refine((t) => parseApprovalTimeout(t) !== undefined,
    'must be a duration such as "90s", "30m", "24h" or "7d", between 1s and 365d').optional(),
});

/** `null` removes the policy (no tool asks); absent leaves it as it is. */
export function parseApproval(value: unknown, path: PropertyKey[] = ['body', 'approval']): ApprovalPolicy | null | undefined {
  if (value === undefined || value === null) return value;
  const parsed = approvalPolicySchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new EngineError('validation', `Invalid approval policy: ${describeIssues(parsed.error.issues, path).join('; ')}`);
}

/** The longest a tool call may wait for answers: it lengthens the call's activity by as much. */
export const MAX_ELICITATION_TIMEOUT_MS = 24 * 3_600_000;

const ELICITATION_TIMEOUT_RULE = 'must be a duration from 1s to 24h, like "90s" or "10m"';

/** `elicitationTimeout` ("90s", "10m") in milliseconds; undefined unless it is a duration from 1s to 24h. */
export function elicitationTimeoutMs(text: string): number | undefined {
  const ms = parseDuration(text.trim());
  return ms !== undefined && ms >= 1000 && ms <= MAX_ELICITATION_TIMEOUT_MS ? ms : undefined;
}

const TASK_TIMEOUT_RULE = 'must be a duration from 1s to 24h, like "30m" or "1h"';

/** `taskTimeout` ("30m", "1h") in milliseconds; undefined unless it is a duration from 1s to 24h. */
export function taskTimeoutMs(text: string): number | undefined {
  const ms = parseDuration(text.trim());
  return ms !== undefined && ms >= 1000 && ms <= MAX_TASK_TIMEOUT_MS ? ms : undefined;
}

const PROMPT_CACHE_TTL_RULE = 'must be a duration from 1s to 24h, like "10m" or "1h"';

/** `promptCacheTtl` ("10m", "1h") in milliseconds; undefined unless it is a duration from 1s to 24h. */
export function promptCacheTtlMs(text: string): number | undefined {
  const ms = parseDuration(text.trim());
  return ms !== undefined && ms >= 1000 && ms <= 24 * 3_600_000 ? ms : undefined;
}

export const promptCacheTtlSchema = z.string().max(32)
  .refine((text) => promptCacheTtlMs(text) !== undefined, PROMPT_CACHE_TTL_RULE)
  .meta({ pattern: DURATION_PATTERN });

export const taskTimeoutSchema = z.string().max(32)
  .refine((text) => taskTimeoutMs(text) !== undefined, TASK_TIMEOUT_RULE)
  .meta({ pattern: DURATION_PATTERN });

export const elicitationTimeoutSchema = z.string().max(32)
  .refine((text) => elicitationTimeoutMs(text) !== undefined, ELICITATION_TIMEOUT_RULE)
  .meta({ pattern: DURATION_PATTERN });

/**
 * The durations an imported server (and INTEGRATIONS_FILE) may give beside its transport, as
 * POST /v1/integrations takes them: by the name a request gives, with the name it is stored under
 * (in milliseconds) and its rule. `nullable`: null turns the setting off.
 */
const IMPORTED_DURATIONS = {
  elicitationTimeout: { stored: 'elicitationTimeoutMs', toMs: elicitationTimeoutMs, rule: ELICITATION_TIMEOUT_RULE, nullable: false },
  taskTimeout: { stored: 'taskTimeoutMs', toMs: taskTimeoutMs, rule: TASK_TIMEOUT_RULE, nullable: false },
  promptCacheTtl: { stored: 'promptCacheTtlMs', toMs: promptCacheTtlMs, rule: PROMPT_CACHE_TTL_RULE, nullable: true },
} as const;

export interface ImportedDurations { elicitationTimeoutMs?: number; taskTimeoutMs?: number; promptCacheTtlMs?: number | null }
export const IMPORTED_DURATION_NAMES = Object.keys(IMPORTED_DURATIONS);
export const IMPORTED_DURATION_FIELDS = Object.values(IMPORTED_DURATIONS).map((d) => d.stored);

/** An imported server's durations in milliseconds, checked; each problem, naming its field under `where`, goes to `problems`. */
export function readImportedDurations(raw: Record<string, unknown>, where: string, problems: string[]): ImportedDurations {
  const read: Record<string, number | null> = {};
  for (const [name, { stored, toMs, rule, nullable }] of Object.entries(IMPORTED_DURATIONS)) {
    const value = raw[name];
    if (value === undefined) continue;
    const ms = value === null && nullable ? null : typeof value === 'string' ? toMs(value) : undefined;
    if (ms === undefined) problems.push(`${where}.${name} ${rule}${nullable ? ', or null' : ''}`);
    else read[stored] = ms;
  }
  return read as ImportedDurations;
}

// Not z.int(): past 2^53 it adds a second complaint, about safe integers, to the one about the cap.
const sizeBound = (bound: { max: number }) => z.number().min(1)
  .max(bound.max, { error: `must be at most ${bound.max} (${bound.max / 1024 / 1024} MiB)` })
  .refine(Number.isInteger, 'must be an integer');

/** Settings of the engine's own that an imported server (and INTEGRATIONS_FILE) may carry beside its transport. */
const importedSettingsSchema = z.object({
  elicitation: z.boolean().optional(),
  trustAnnotations: z.boolean().optional(),
  retryNonIdempotent: z.boolean().optional(),
  allowPrivateNetwork: z.boolean().optional(),
  taskQueue: z.string().regex(TASK_QUEUE_PATTERN, 'must be a task queue name (letters, digits, "_", "-", "." up to 200)')
    .nullable().optional(),
  maxResultBytes: sizeBound(SIZE_BOUNDS.maxResultBytes).optional(),
  maxResourceBytes: sizeBound(SIZE_BOUNDS.maxResourceBytes).optional(),
  protocol: z.enum(PROTOCOL_CHOICES).optional(),
  sampling: z.enum(SAMPLING_MODES).optional(),
  samplingMaxTokens: z.number().int().min(1).max(1_000_000).optional(),
  maxConcurrentCalls: z.number().int().min(1).max(CONCURRENT_CALLS.max).optional(),
});

export type ImportedSettings = z.infer<typeof importedSettingsSchema>;
export const IMPORTED_SETTINGS = Object.keys(importedSettingsSchema.shape);

/** The settings of one imported server (other keys are not looked at); a 400 whose `field` names the offending ones. */
export function parseImportedSettings(raw: Record<string, unknown>, path: PropertyKey[]): ImportedSettings {
  const parsed = importedSettingsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const field = [...new Set(parsed.error.issues.map((issue) => formatPath([...path, ...issue.path])))].join(', ');
  throw new EngineError('validation', describeIssues(parsed.error.issues, path).join('; '), { field });
}
