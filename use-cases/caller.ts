import { EngineError } from '../core/engine-error';
import type { NamedKind, OperatorNames } from '../platform/operator-names';

/**
 * Who asks, as far as a use case needs to know: whether they may do what only the operator may
 * (what a worker executes, where stored secrets go, names the operator's files refer to). The
 * API decides it from the request's key (api/auth.ts AdminPolicy).
 */
export interface Caller {
  readonly isOperator: boolean;
  /** what a caller who is not the operator is told to do instead (the API: send the admin key) */
  readonly operatorHint: string;
}

/** Refuses (admin_required, naming `field`) unless the caller is the operator; `alternative` says where else it can be done. */
export function requireAdmin(caller: Caller, field: string, alternative?: string): void {
  if (caller.isOperator) return;
  const elsewhere = alternative ? `; ${alternative}` : '';
  throw new EngineError('admin_required', `${field}: only the operator may set this; ${caller.operatorHint}${elsewhere}`, { field });
}

/**
 * Refuses naming `field` unless the caller is the operator, when the operator's files refer to
 * `name` (platform/operator-names.ts): whoever takes or frees such a name decides what they find.
 */
export function requireAdminForName(
  caller: Caller, names: OperatorNames, named: { kind: NamedKind; name: string; field: string },
): void {
  const by = names.referrers(named.kind, named.name);
  if (by.length > 0) requireAdmin(caller, named.field, `the ${named.kind} name ${named.name} is referred to by ${by.join(', ')}`);
}
