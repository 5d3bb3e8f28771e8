import { EngineError } from '../../core/engine-error';
import type { Role } from '../../core/tenancy';
import type { Db } from '../../store/pool';
import { findValidKey, insertApiKey, listApiKeys, revokeApiKey, type ApiKeyRecord } from '../../store/tenants';
import { holdsRole, keyCaller, requireRole, type Caller } from '../caller';
import { tenantFor } from './tenants';

/*
 * API keys of tenants (docs/security.md): the operator issues them for any tenant, a tenant's
 * `manage` for its own; nobody issues a role they do not hold. The secret is shown once.
 */

export interface IssueKeyRequest {
  /** a tenant's id or name; the caller's tenant when absent */
  tenantId?: string;
  name: string;
  roles: Role[];
  expiresAt?: string;
}

export async function issueKey(db: Db, caller: Caller, req: IssueKeyRequest): Promise<ApiKeyRecord & { key: string }> {
  requireRole(caller, 'manage');
  const tenant = await tenantFor(db, caller, req.tenantId ?? caller.tenantId);
  const beyond = req.roles.filter((role) => !holdsRole(caller, role));
  if (beyond.length > 0) {
    throw new EngineError('forbidden', `roles: a key cannot hold what its issuer does not (${beyond.join(', ')})`, { field: 'roles' });
  }
  if (req.expiresAt !== undefined && !(Date.parse(req.expiresAt) > Date.now())) {
    throw new EngineError('validation', 'expiresAt: a time in the future (ISO 8601)', { field: 'expiresAt' });
  }
  const { record, secret } = await insertApiKey(db, {
    tenantId: tenant.id, name: req.name, roles: [...new Set(req.roles)], createdBy: caller.principal.id, expiresAt: req.expiresAt,
  });
  return { ...record, key: secret };
}

/** The keys not revoked: the operator sees every tenant's (or one's), anyone else their tenant's. */
export async function listKeys(db: Db, caller: Caller, tenantRef?: string): Promise<ApiKeyRecord[]> {
  requireRole(caller, 'manage');
  if (tenantRef !== undefined) return listApiKeys(db, (await tenantFor(db, caller, tenantRef)).id);
  return listApiKeys(db, caller.isOperator ? undefined : caller.tenantId);
}

export async function revokeKey(db: Db, caller: Caller, id: string): Promise<void> {
  requireRole(caller, 'manage');
  const revoked = await revokeApiKey(db, id, caller.isOperator ? undefined : caller.tenantId);
  if (!revoked) throw new EngineError('not_found', `Key ${id} does not exist`);
}

/**
 * Who holds `secret` when a process other than the API is given a key (`agent-engine mcp`'s
 * AGENT_ENGINE_KEY): an issued key's tenant and roles; undefined when it is unknown, revoked or expired.
 */
export async function callerOfKey(db: Db, secret: string): Promise<Caller | undefined> {
  const key = await findValidKey(db, secret);
  return key && keyCaller(key, 'use a key that holds operate');
}
