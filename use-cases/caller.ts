import { EngineError } from '../core/engine-error';
import { DEFAULT_TENANT_ID, ROLES, TENANT_ROLES, type Principal, type Role } from '../core/tenancy';
import type { NamedKind, OperatorNames } from '../platform/operator-names';

/**
 * Who asks, as far as a use case needs to know: the tenant they act in (every object they see or
 * make is that tenant's), who they are, their roles, and whether they may do what only the operator
 * may (what a worker executes, where stored secrets go, names the operator's files refer to). The
 * API decides it from the request's credentials (api/principals.ts).
 */
export interface Caller {
  readonly tenantId: string;
  readonly principal: Principal;
  readonly roles: readonly Role[];
  /** holds `operate` */
  readonly isOperator: boolean;
  /** what a caller who is not the operator is told to do instead (the API: send the admin key) */
  readonly operatorHint: string;
}

/** The engine acting for the operator, in the tenant `default` unless told otherwise (the CLI, files, tests). */
export function operatorCaller(tenantId = DEFAULT_TENANT_ID, name = 'operator'): Caller {
  return { tenantId, principal: { id: 'operator', name }, roles: ROLES, isOperator: true, operatorHint: '' };
}

/** The holder of API_KEY: the tenant `default` with read, run, decide and manage (the operator too where every caller is). */
export function apiKeyCaller(isOperator: boolean, operatorHint: string): Caller {
  return { tenantId: DEFAULT_TENANT_ID, principal: API_KEY_PRINCIPAL, roles: TENANT_ROLES, isOperator, operatorHint };
}

const API_KEY_PRINCIPAL: Principal = { id: 'api_key', name: 'API_KEY' };

/** The holder of an issued key, in the key's tenant with its roles. */
export function keyCaller(key: { id: string; name: string; tenantId: string; roles: readonly Role[] }, operatorHint: string): Caller {
  return {
    tenantId: key.tenantId, principal: { id: key.id, name: key.name }, roles: key.roles,
    isOperator: key.roles.includes('operate'), operatorHint,
  };
}

/** Whether the caller holds the role (the operator holds every role). */
export const holdsRole = (caller: Caller, role: Role): boolean => caller.isOperator || caller.roles.includes(role);

/** Refuses (forbidden) unless the caller holds the role. */
export function requireRole(caller: Caller, role: Role): void {
  if (holdsRole(caller, role)) return;
  throw new EngineError('forbidden', `This needs the role ${role}; the caller holds ${caller.roles.join(', ') || 'none'}`, { role });
}

/** Refuses (admin_required, naming `field`) unless the caller is the operator; `alternative` says where else it can be done. */
export function requireAdmin(caller: Caller, field: string, alternative?: string): void {
  if (caller.isOperator) return;
  const elsewhere = alternative ? `; ${alternative}` : '';
  throw new EngineError('admin_required', `${field}: only the operator may set this; ${caller.operatorHint}${elsewhere}`, { field });
}

/**
 * Authorizing a tenant's integration with its OAuth server, or revoking that (docs/security.md):
 * `manage` of an issued key or a token, or the operator. API_KEY keeps the answer it always had
 * (admin_required): its holder never could.
 */
export function requireAuthorizer(caller: Caller, field: string): void {
  if (caller.isOperator) return;
  if (caller.principal.id === API_KEY_PRINCIPAL.id) requireAdmin(caller, field);
  else requireRole(caller, 'manage');
}

/**
 * Refuses naming `field` unless the caller is the operator, when the operator's files refer to
 * `name` in the caller's tenant (platform/operator-names.ts): whoever takes or frees such a name decides what they find.
 */
export function requireAdminForName(
  caller: Caller, names: OperatorNames, named: { kind: NamedKind; name: string; field: string },
): void {
  const by = names.referrers(named.kind, named.name, caller.tenantId);
  if (by.length > 0) requireAdmin(caller, named.field, `the ${named.kind} name ${named.name} is referred to by ${by.join(', ')}`);
}
