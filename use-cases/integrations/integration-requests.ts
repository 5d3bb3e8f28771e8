import { z } from 'zod';
import { PROTOCOL_CHOICES } from '../../core/protocol-era';
import { SAMPLING_MODES } from '../../core/sampling';
import {
  CONCURRENT_CALLS, INTEGRATION_NAME_PATTERN, integrationNameProblem, SIZE_BOUNDS, TASK_QUEUE_PATTERN,
} from '../../core/integration';
import {
  approvalPolicySchema, elicitationTimeoutMs, elicitationTimeoutSchema, promptCacheTtlMs, promptCacheTtlSchema, taskTimeoutMs,
  taskTimeoutSchema, transportSchema,
} from './integration-input';
import { MAX_IMPORTED_SERVERS } from './mcp-config-import';

/**
 * What a caller may send to register, change or import integrations; the API checks requests
 * against these and the use cases take their types. Transports are checked in depth
 * (integration-input.ts), by messages that name the field without quoting secret values.
 */

const MAX_INT32 = 2_147_483_647;

const name = z.string().min(1).max(64)
  .superRefine((text, ctx) => {
    const problem = integrationNameProblem(text);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ pattern: INTEGRATION_NAME_PATTERN.source, description: 'unique; "__" is reserved' });

const transportDescription = '{type:"stdio", command, args?, env?, cwd?} or {type:"http", url, headers?, auth?}; '
  + 'env and header values are secrets, never returned. '
  + 'auth: {type:"oauth", scopes?, clientId?, clientSecret?, clientMetadataUrl?} for a server behind the MCP authorization flow '
  + '(clientSecret is a secret too)';

/** An integration's settings beside its name and transport, as a caller sets them and as responses show them. */
export const integrationSettings = {
  toolTimeoutMs: z.int().min(1).max(MAX_INT32)
    .describe('per MCP request; default 60000 (raising it above the default needs the admin key)'),
  maxTotalTimeoutMs: z.int().min(1).max(MAX_INT32).nullable()
    .describe('bound on a call that keeps reporting progress; null: 10 minutes, or toolTimeoutMs when longer '
      + '(above 10 minutes needs the admin key)'),
  maxConcurrentCalls: z.int().min(1).max(CONCURRENT_CALLS.max)
    .describe('how many of its calls one worker runs at once (default 10); further calls wait their turn without holding a worker\'s slot. '
      + 'Raising it above the default needs the admin key'),
  maxResourceBytes: z.int().min(1).max(SIZE_BOUNDS.maxResourceBytes.max)
    .describe('the largest resource read (default and most: 256 MiB, since a resource is read as one string)'),
  maxResultBytes: z.int().min(1).max(SIZE_BOUNDS.maxResultBytes.max)
    .describe('the largest tool response a call accepts (default 1 MiB, at most 64 MiB); a larger one is refused. '
      + 'Raising it above the default needs the admin key'),
  trustAnnotations: z.boolean()
    .describe("trust this server's readOnlyHint (approval unless_read_only) and idempotentHint (retries); "
      + 'turning it on needs the admin key'),
  retryNonIdempotent: z.boolean()
    .describe('retry this server\'s tools that are neither read-only nor idempotent too (after a worker\'s crash, a timeout): '
      + 'say so only of a server that deduplicates calls by the idempotency key each tools/call carries in its _meta '
      + '(io.github.durable-agent-engine/idempotency-key). Default false; turning it on needs the admin key'),
  enabled: z.boolean(),
  promptInjection: z.boolean().describe("inject this server's conventional prompts into runs"),
  disabledPrompts: z.array(z.string().min(1).max(256)).max(1000),
  promptArguments: z.record(z.string(), z.record(z.string(), z.string()))
    .refine((prompts) => Object.keys(prompts).length <= 1000, 'at most 1000 prompts')
    .meta({ maxProperties: 1000, description: 'arguments passed to prompts/get, keyed by prompt name' }),
  approval: approvalPolicySchema.nullable()
    .describe('which tools wait for a person\'s approval before they run '
      + '(unless_read_only trusts readOnlyHint only with trustAnnotations); null: none. Setting it needs the admin key'),
  taskQueue: z.string().regex(TASK_QUEUE_PATTERN).nullable()
    .describe('pins discovery and tool calls to workers polling this task queue (their MCP_TASK_QUEUES); null: any worker. '
      + 'Changing it needs the admin key'),
  elicitation: z.boolean()
    .describe("declare MCP elicitation to this server: its questions during tool calls become the run's pendingInputs "
      + '(turning it on needs the admin key)'),
  allowPrivateNetwork: z.boolean()
    .describe('whether the server and its OAuth endpoints may be on loopback or private addresses '
      + '(default false; turning it on needs the admin key). '
      + 'Metadata and link-local addresses stay refused, and BLOCK_PRIVATE_NETWORKS refuses the rest for every integration'),
  sampling: z.enum(SAMPLING_MODES)
    .describe('whether the server may ask the run\'s model for completions (MCP sampling): never (default), '
      + 'approve (each request waits for a reviewer as a pending approval samp_…), allow. '
      + 'It sees only the server\'s own messages. Anything but never needs the admin key'),
  samplingMaxTokens: z.number().int().min(1).max(1_000_000)
    .describe('the cap on a sampling request\'s maxTokens (default 1024; raising it above the default needs the admin key)'),
  protocol: z.enum(PROTOCOL_CHOICES)
    .describe('the MCP protocol era spoken with this server: auto (default) negotiates and keeps the outcome; '
      + 'a version pins that era, never falling back'),
};

const settingsRequest = z.object({
  ...integrationSettings,
  elicitationTimeout: elicitationTimeoutSchema
    .describe('how long a tool call waits for answers to the server\'s questions before declining them, e.g. "90s", "10m" '
      + '(default 10m; raising it needs the admin key)'),
  taskTimeout: taskTimeoutSchema
    .describe('how long a tool call the server runs as a task (MCP tasks) may take in all, e.g. "30m", "4h" '
      + '(default 1h, at most 24h; raising it needs the admin key)'),
  promptCacheTtl: promptCacheTtlSchema.nullable()
    .describe('how long a worker keeps the conventional prompts it fetched from this server, per prompt and arguments, '
      + 'e.g. "10m" (1s to 24h); the server\'s notifications/prompts/list_changed drops them sooner. '
      + 'null (default): fetched for every run'),
}).partial();

export const createIntegrationRequest = settingsRequest.extend({
  name,
  transport: transportSchema.describe(transportDescription),
}).strict();

export const changeIntegrationRequest = settingsRequest.extend({
  name: name.optional(),
  // Merged with the stored transport first (integration-input.ts patchTransport), then checked whole.
  transport: z.looseObject({ type: z.enum(['stdio', 'http']).optional() })
    .describe('fields given replace the stored ones (env and headers as a whole); of another type, a complete transport; '
      + 'cwd: null removes it')
    .optional(),
}).strict()
  .refine((changes) => Object.keys(changes).length > 0, 'give at least one field to change')
  .meta({ minProperties: 1 });

const serverList = (description: string) => z.record(z.string(), z.unknown())
  .refine((servers) => Object.keys(servers).length <= MAX_IMPORTED_SERVERS, `lists more than ${MAX_IMPORTED_SERVERS} servers`)
  .meta({ maxProperties: MAX_IMPORTED_SERVERS, description })
  .optional();

/** Checked server by server by mcp-config-import.ts, which names every problem at once. */
export const importIntegrationsRequest = z.looseObject({
  mcpServers: serverList('Claude Desktop: {name: {command, args?, env?, cwd?} | {url, headers?}}'),
  servers: serverList('VS Code: {name: {type?, command?, args?, env?, cwd?, url?, headers?}}'),
}).describe('${VAR} and ${env:VAR} are expanded from the API environment into env and headers values only (an operator act); '
  + 'other top-level keys are ignored');

export type CreateIntegrationRequest = z.infer<typeof createIntegrationRequest>;
export type ChangeIntegrationRequest = z.infer<typeof changeIntegrationRequest>;
export type ImportIntegrationsRequest = z.infer<typeof importIntegrationsRequest>;

type GivenDurations = { elicitationTimeout?: string; taskTimeout?: string; promptCacheTtl?: string | null };
type StoredDurations = { elicitationTimeoutMs?: number; taskTimeoutMs?: number; promptCacheTtlMs?: number | null };

/** A request's settings as stored: durations in milliseconds (the schema has checked them). */
export function storedSettings<T extends GivenDurations>(request: T): Omit<T, keyof GivenDurations> & StoredDurations {
  const { elicitationTimeout, taskTimeout, promptCacheTtl, ...rest } = request;
  const ms = elicitationTimeout === undefined ? undefined : elicitationTimeoutMs(elicitationTimeout);
  const taskMs = taskTimeout === undefined ? undefined : taskTimeoutMs(taskTimeout);
  const cacheMs = promptCacheTtl === undefined || promptCacheTtl === null ? promptCacheTtl : promptCacheTtlMs(promptCacheTtl);
  return {
    ...rest, ...(ms !== undefined ? { elicitationTimeoutMs: ms } : {}), ...(taskMs !== undefined ? { taskTimeoutMs: taskMs } : {}),
    ...(cacheMs !== undefined ? { promptCacheTtlMs: cacheMs } : {}),
  };
}
