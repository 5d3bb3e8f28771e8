import type { ApprovalPolicy } from '../../core/approval';
import { formatDuration } from '../../core/duration';
import { newId } from '../../platform/ids';
import { secretKeys } from '../../platform/secrets/key-ring';
import {
  CONCURRENT_CALLS, DEFAULT_ELICITATION_TIMEOUT_MS, DEFAULT_TASK_TIMEOUT_MS, DEFAULT_TOOL_TIMEOUT_MS, integrationNameProblem, SIZE_BOUNDS,
  type Integration, type IntegrationTransport, type NewIntegration, type PublicIntegration, type PublicTransport,
} from '../../core/integration';
import { openTransport, sealTransport } from './secrets';
import type { Queryable } from '../pool';
import type { IntegrationProtocol } from '../../core/protocol-era';
import { DEFAULT_SAMPLING_MAX_TOKENS, type SamplingMode } from '../../core/sampling';
import { DEFAULT_TENANT_ID } from '../../core/tenancy';

/** A row as the driver reads it, or as row_to_json gives it inside another statement (timestamps as text, bigints as numbers). */
export interface IntegrationRow {
  id: string; name: string; transport: IntegrationTransport; tool_timeout_ms: number; max_total_timeout_ms: number | null;
  max_resource_bytes: string | number; max_result_bytes: string | number; trust_annotations: boolean; enabled: boolean;
  created_at: Date | string; updated_at: Date | string;
  prompt_injection: boolean; disabled_prompts: string[]; prompt_arguments: Record<string, Record<string, string>>;
  task_queue: string | null; secrets: unknown; approval: ApprovalPolicy | null; elicitation: boolean; elicitation_timeout_ms: number;
  allow_private_network: boolean; protocol: IntegrationProtocol; sampling: SamplingMode; sampling_max_tokens: number;
  task_timeout_ms: number;
  prompt_cache_ttl_ms: number | null; max_concurrent_calls?: number; retry_non_idempotent: boolean;
}

export const toIntegration = (r: IntegrationRow): Integration => ({
  id: r.id, name: r.name, transport: openTransport(secretKeys(), r.id, r.transport, r.secrets),
  toolTimeoutMs: r.tool_timeout_ms, maxTotalTimeoutMs: r.max_total_timeout_ms,
  // bigint arrives as a string. A row stored before the caps existed is held to them here.
  maxResourceBytes: Math.min(Number(r.max_resource_bytes), SIZE_BOUNDS.maxResourceBytes.max),
  maxResultBytes: Math.min(Number(r.max_result_bytes), SIZE_BOUNDS.maxResultBytes.max),
  trustAnnotations: r.trust_annotations, retryNonIdempotent: r.retry_non_idempotent, enabled: r.enabled,
  promptInjection: r.prompt_injection, disabledPrompts: r.disabled_prompts, promptArguments: r.prompt_arguments,
  taskQueue: r.task_queue, approval: r.approval, elicitation: r.elicitation, elicitationTimeoutMs: r.elicitation_timeout_ms,
  allowPrivateNetwork: r.allow_private_network, protocol: r.protocol, sampling: r.sampling, samplingMaxTokens: r.sampling_max_tokens,
  taskTimeoutMs: r.task_timeout_ms,
  promptCacheTtlMs: r.prompt_cache_ttl_ms ?? null, maxConcurrentCalls: r.max_concurrent_calls ?? CONCURRENT_CALLS.default,
  createdAt: new Date(r.created_at).toISOString(), updatedAt: new Date(r.updated_at).toISOString(),
});

function publicAuth({ clientSecret, ...rest }: NonNullable<Extract<IntegrationTransport, { type: 'http' }>['auth']>) {
  return { ...rest, clientSecretSet: Boolean(clientSecret) };
}

export function toPublic(integration: Integration): PublicIntegration {
  const t = integration.transport;
  const transport: PublicTransport = t.type === 'stdio'
    ? { type: 'stdio', command: t.command, args: t.args ?? [], envKeys: Object.keys(t.env ?? {}).sort(), ...(t.cwd ? { cwd: t.cwd } : {}) }
    : { type: 'http', url: t.url, headerKeys: Object.keys(t.headers ?? {}).sort(), ...(t.auth ? { auth: publicAuth(t.auth) } : {}) };
  const { elicitationTimeoutMs, taskTimeoutMs, promptCacheTtlMs, ...rest } = integration;
  return {
    ...rest, transport, elicitationTimeout: formatDuration(elicitationTimeoutMs), taskTimeout: formatDuration(taskTimeoutMs),
    promptCacheTtl: promptCacheTtlMs === null ? null : formatDuration(promptCacheTtlMs),
  };
}

/** Stores a new integration in the tenant (`default` when not given: the operator's file, tests). */
export async function insertIntegration(db: Queryable, integration: NewIntegration, tenantId = DEFAULT_TENANT_ID): Promise<Integration> {
  const problem = integrationNameProblem(integration.name);
  if (problem) throw new Error(`Invalid integration name "${integration.name}": ${problem}`);
  const id = newId('int');
  const stored = sealTransport(secretKeys(), id, integration.transport);
  const { rows } = await db.query<IntegrationRow>(
    `INSERT INTO integrations (id, name, transport, tool_timeout_ms, max_total_timeout_ms, max_resource_bytes, trust_annotations, enabled,
       prompt_injection, disabled_prompts, prompt_arguments, task_queue, secrets, max_result_bytes, approval, elicitation,
       elicitation_timeout_ms, allow_private_network, protocol, sampling, sampling_max_tokens, task_timeout_ms, prompt_cache_ttl_ms,
       max_concurrent_calls, tenant_id, retry_non_idempotent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)
     RETURNING *`,
    [id, integration.name, JSON.stringify(stored.transport), integration.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
      integration.maxTotalTimeoutMs ?? null, integration.maxResourceBytes ?? SIZE_BOUNDS.maxResourceBytes.default,
      integration.trustAnnotations ?? false, integration.enabled ?? true,
      integration.promptInjection ?? true, integration.disabledPrompts ?? [], JSON.stringify(integration.promptArguments ?? {}),
      integration.taskQueue ?? null, stored.secrets && JSON.stringify(stored.secrets),
      integration.maxResultBytes ?? SIZE_BOUNDS.maxResultBytes.default, integration.approval ? JSON.stringify(integration.approval) : null,
      integration.elicitation ?? false, integration.elicitationTimeoutMs ?? DEFAULT_ELICITATION_TIMEOUT_MS,
      integration.allowPrivateNetwork ?? false,
      integration.protocol ?? 'auto', integration.sampling ?? 'never', integration.samplingMaxTokens ?? DEFAULT_SAMPLING_MAX_TOKENS,
      integration.taskTimeoutMs ?? DEFAULT_TASK_TIMEOUT_MS, integration.promptCacheTtlMs ?? null,
      integration.maxConcurrentCalls ?? CONCURRENT_CALLS.default, tenantId, integration.retryNonIdempotent ?? false],
  );
  return toIntegration(rows[0]);
}

/** By id, whatever its tenant: for workers, which are handed ids the API checked. */
export async function findIntegration(db: Queryable, id: string): Promise<Integration | undefined> {
  const { rows } = await db.query<IntegrationRow>('SELECT * FROM integrations WHERE id = $1', [id]);
  return rows[0] && toIntegration(rows[0]);
}

/** By id, only when it is the tenant's: another tenant's is not found. */
export async function findTenantIntegration(db: Queryable, tenantId: string, id: string): Promise<Integration | undefined> {
  const { rows } = await db.query<IntegrationRow>('SELECT * FROM integrations WHERE id = $1 AND tenant_id = $2', [id, tenantId]);
  return rows[0] && toIntegration(rows[0]);
}

/** The tenant's integration of that name (names are unique per tenant); `default` when no tenant is given. */
export async function findIntegrationByName(db: Queryable, name: string, tenantId = DEFAULT_TENANT_ID): Promise<Integration | undefined> {
  const { rows } = await db.query<IntegrationRow>('SELECT * FROM integrations WHERE name = $1 AND tenant_id = $2', [name, tenantId]);
  return rows[0] && toIntegration(rows[0]);
}

/** The integrations with these ids, in the order of `ids`; ids that do not exist are left out. */
export async function findIntegrations(db: Queryable, ids: string[]): Promise<Integration[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<IntegrationRow>('SELECT * FROM integrations WHERE id = ANY($1)', [ids]);
  const byId = new Map(rows.map((r) => [r.id, toIntegration(r)]));
  return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
}

/** The tenant's integrations (`default` when not given), unpaged: integrations are configuration, counted in tens. */
export async function listIntegrations(db: Queryable, tenantId = DEFAULT_TENANT_ID): Promise<Integration[]> {
  const { rows } = await db.query<IntegrationRow>('SELECT * FROM integrations WHERE tenant_id = $1 ORDER BY created_at, id', [tenantId]);
  return rows.map(toIntegration);
}

/** A partial update; `maxTotalTimeoutMs: null` goes back to the engine's default bound. */
export type IntegrationPatch = Partial<NewIntegration>;

const patchColumns: Record<keyof IntegrationPatch, string> = {
  name: 'name', transport: 'transport', toolTimeoutMs: 'tool_timeout_ms', maxTotalTimeoutMs: 'max_total_timeout_ms',
  maxResourceBytes: 'max_resource_bytes', maxResultBytes: 'max_result_bytes', trustAnnotations: 'trust_annotations',
  retryNonIdempotent: 'retry_non_idempotent', enabled: 'enabled',
  promptInjection: 'prompt_injection', disabledPrompts: 'disabled_prompts', promptArguments: 'prompt_arguments',
  taskQueue: 'task_queue', approval: 'approval', elicitation: 'elicitation', elicitationTimeoutMs: 'elicitation_timeout_ms',
  allowPrivateNetwork: 'allow_private_network', protocol: 'protocol', sampling: 'sampling', samplingMaxTokens: 'sampling_max_tokens',
  taskTimeoutMs: 'task_timeout_ms',
  promptCacheTtlMs: 'prompt_cache_ttl_ms', maxConcurrentCalls: 'max_concurrent_calls',
};
const jsonbFields = new Set<keyof IntegrationPatch>(['transport', 'promptArguments', 'approval']);

/** Applies the given fields; updated_at moves, so worker pools reconnect with the new config. Undefined when absent. */
export async function updateIntegration(db: Queryable, id: string, patch: IntegrationPatch): Promise<Integration | undefined> {
  if (patch.name !== undefined) {
    const problem = integrationNameProblem(patch.name);
    if (problem) throw new Error(`Invalid integration name "${patch.name}": ${problem}`);
  }
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const [key, column] of Object.entries(patchColumns) as [keyof IntegrationPatch, string][]) {
    if (patch[key] === undefined || key === 'transport') continue;
    values.push(jsonbFields.has(key) && patch[key] !== null ? JSON.stringify(patch[key]) : patch[key]);
    sets.push(`${column} = $${values.length}`);
  }
  if (patch.transport) {
    // A new transport replaces the secrets too: sealed again, bound to this row.
    const stored = sealTransport(secretKeys(), id, patch.transport);
    // Tokens were issued for one server and client: another URL or OAuth client must not receive them.
    const next = stored.transport as { url?: string; auth?: unknown };
    await db.query(
      `DELETE FROM integration_oauth o USING integrations i WHERE o.id = i.id AND i.id = $1
         AND (i.transport->>'url' IS DISTINCT FROM $2 OR i.transport->'auth' IS DISTINCT FROM $3::jsonb)`,
      [id, next.url ?? null, next.auth === undefined ? null : JSON.stringify(next.auth)]);
    values.push(JSON.stringify(stored.transport), stored.secrets && JSON.stringify(stored.secrets));
    sets.push(`transport = $${values.length - 1}`, `secrets = $${values.length}`);
  }
  const { rows } = await db.query<IntegrationRow>(
    `UPDATE integrations SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING *`, values,
  );
  return rows[0] && toIntegration(rows[0]);
}

/** The names among `names` that the tenant's integrations already use. */
export async function takenIntegrationNames(db: Queryable, tenantId: string, names: string[]): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    'SELECT name FROM integrations WHERE tenant_id = $1 AND name = ANY($2) ORDER BY name', [tenantId, names]);
  return rows.map((r) => r.name);
}

export type DeleteOutcome = { status: 'deleted' | 'not_found' } | { status: 'referenced'; agents: { id: string; name: string }[] };

/**
 * Inside a transaction: deletes the integration unless an agent still lists it. The row lock waits
 * for agent inserts that key-share-locked it, so a concurrent insert cannot slip in a dangling id.
 * Disabled (deleted) agents run no more: they lose the integration instead of keeping it.
 */
export async function deleteUnreferencedIntegration(tx: Queryable, id: string): Promise<DeleteOutcome> {
  const locked = await tx.query('SELECT id FROM integrations WHERE id = $1 FOR UPDATE', [id]);
  if (locked.rowCount === 0) return { status: 'not_found' };
  const { rows: agents } = await tx.query<{ id: string; name: string }>(
    'SELECT id, name FROM agents WHERE $1 = ANY(integration_ids) AND disabled_at IS NULL ORDER BY created_at, id', [id],
  );
  if (agents.length > 0) return { status: 'referenced', agents };
  await tx.query(
    `UPDATE agents SET integration_ids = array_remove(integration_ids, $1), prompt_order = array_remove(prompt_order, $1),
       prompt_when = prompt_when - $1::text WHERE $1 = ANY(integration_ids)`, [id],
  );
  await tx.query('DELETE FROM integrations WHERE id = $1', [id]);
  return { status: 'deleted' };
}

/** Moves the integration's updated_at: pools hold connections by it, so every worker reconnects (with new tokens, or none). */
export async function touchIntegration(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE integrations SET updated_at = now() WHERE id = $1', [id]);
}
