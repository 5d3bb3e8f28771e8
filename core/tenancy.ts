/**
 * Tenants and roles (docs/security.md). A tenant owns threads, runs, agents, integrations and what
 * hangs off them; a principal (a person or a service account) belongs to one tenant and holds roles.
 */

/**
 * `read`: GET routes, event streams, /mcp listings; `run`: start and cancel runs, create threads,
 * call agents; `decide`: approvals and questions; `manage`: the tenant's agents, integrations and
 * keys; `operate`: the operator's reach, engine-wide (what ADMIN_API_KEY holds).
 */
export type Role = 'read' | 'run' | 'decide' | 'manage' | 'operate';

export const ROLES: readonly Role[] = ['read', 'run', 'decide', 'manage', 'operate'];

/** what API_KEY holds, and a keyless caller of a loopback API besides the operator's reach */
export const TENANT_ROLES: readonly Role[] = ['read', 'run', 'decide', 'manage'];

/** the tenant today's rows and API_KEY belong to (migration 24) */
export const DEFAULT_TENANT_ID = 'ten_default';
export const DEFAULT_TENANT_NAME = 'default';

/** A tenant's name: lower-case letters, digits, `-` and `_`, starting with a letter or digit. */
export const TENANT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * A tenant's caps; null: none. `maxRunningRuns`: its runs running at once (sub-agents' runs count,
 * and are never refused: their parent was admitted); `toolCallSlots`: its tool calls one worker runs at once.
 */
export interface TenantLimits {
  maxRunningRuns: number | null;
  toolCallSlots: number | null;
}

export const NO_TENANT_LIMITS: TenantLimits = { maxRunningRuns: null, toolCallSlots: null };

export interface Tenant {
  id: string;
  name: string;
  limits: TenantLimits;
  createdAt: string;
}

/** Who acted: a key's id or a token's subject, and a name a person recognises. */
export interface Principal {
  readonly id: string;
  readonly name: string;
}
