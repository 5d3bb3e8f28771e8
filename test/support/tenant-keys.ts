import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

/**
 * Requests to a test's API as the holder of a key, and the operator's setup of tenants and their
 * keys through the API (`POST /v1/tenants`, `POST /v1/keys`) with the admin key. `app` is read at
 * each request: tests build it in beforeAll.
 */
export interface TenantKeys {
  as(key: string): (options: InjectOptions) => Promise<LightMyRequestResponse>;
  /** a new tenant named `<prefix>-<random>`; its id */
  tenant(prefix: string): Promise<string>;
  /** a new key of the tenant with these roles (named after them); the key */
  issue(tenantId: string, roles: string[]): Promise<string>;
}

export function tenantKeys(app: () => FastifyInstance, adminKey: string): TenantKeys {
  const as = (key: string) => (options: InjectOptions) =>
    app().inject({ ...options, headers: { ...options.headers, authorization: `Bearer ${key}` } });
  const created = async (options: InjectOptions, field: 'id' | 'key'): Promise<string> => {
    const res = await as(adminKey)(options);
    if (res.statusCode !== 201) throw new Error(`${options.method} ${options.url} answered ${res.statusCode}: ${res.body}`);
    return res.json()[field];
  };
  return {
    as,
    tenant: (prefix) => created({ method: 'POST', url: '/v1/tenants', payload: { name: `${prefix}-${randomUUID().slice(0, 8)}` } }, 'id'),
    issue: (tenantId, roles) => created({ method: 'POST', url: '/v1/keys', payload: { tenantId, name: roles.join('-'), roles } }, 'key'),
  };
}
