import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { DEFAULT_TENANT_ID, type Role } from '../core/tenancy';
import { holdsRole, type Caller } from '../use-cases/caller';

/**
 * The role each MCP method needs (docs/security.md#tenants-and-roles): listing and reading need
 * `read`, calling an agent or cancelling its task `run`, answering a task's questions `decide`.
 * Methods not named (initialize, ping, notifications) need none beyond being signed in.
 */
const METHOD_ROLES: Readonly<Record<string, Role>> = {
  'tools/list': 'read', 'prompts/list': 'read', 'prompts/get': 'read',
  'tasks/get': 'read', 'tasks/result': 'read', 'tasks/list': 'read',
  'tools/call': 'run', 'tasks/cancel': 'run',
  'tasks/update': 'decide',
};

/** A protocol error when the caller lacks the role `method` (or `role`, when given) needs. */
export function requireMethodRole(caller: Caller, method: string, role = METHOD_ROLES[method]): void {
  if (role === undefined || holdsRole(caller, role)) return;
  const held = caller.roles.join(', ') || 'none';
  throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `${method} needs the role ${role}; the caller holds ${held}`);
}

/**
 * What a caller's MCP tasks and signed questions are bound to: the kind of credential (as before
 * tenants: `api`, `admin`, `local`), within its tenant. The tenant `default` keeps the bare kinds,
 * so tasks started before tenants are found as before.
 */
export function callerScope(caller: Caller, kind: string): string {
  return caller.tenantId === DEFAULT_TENANT_ID ? kind : `${caller.tenantId}:${kind}`;
}
