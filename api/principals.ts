import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { EngineError } from '../core/engine-error';
import { DEFAULT_TENANT_ID, TENANT_ROLES, type Role } from '../core/tenancy';
import type { Db } from '../store/pool';
import type { RunChangeFeed } from '../store/runs/change-feed';
import { findTenant, findValidKey, type ApiKeyRecord } from '../store/tenants';
import { apiKeyCaller, keyCaller, operatorCaller, type Caller } from '../use-cases/caller';
import type { TokenVerifier } from './token-verifier';

// Hashing first gives equal-length buffers, so timingSafeEqual leaks neither the key nor its length.
const digest = (value: string) => createHash('sha256').update(value).digest();

export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const [scheme, token, ...rest] = header.trim().split(/\s+/);
  return scheme.toLowerCase() === 'bearer' && token && rest.length === 0 ? token : undefined;
}

/** Whether `token` is `key`, compared in constant time. */
export function sameKey(key: string | undefined): (token: string) => boolean {
  const expected = key ? digest(key) : undefined;
  return (token) => expected !== undefined && timingSafeEqual(digest(token), expected);
}

export interface PrincipalOptions {
  db: Db;
  /** API_KEY: a principal of the tenant `default` with read, run, decide and manage */
  apiKey?: string;
  /** ADMIN_API_KEY: the operator */
  adminApiKey?: string;
  /** whoever reaches a loopback API without keys is the operator (platform/config.ts everyCallerIsOperator) */
  everyCallerIsOperator: boolean;
  /** told of revoked keys (the `keys` change), so that every API process refuses them at once */
  changes: RunChangeFeed;
  /** tokens from the operator's OpenID Connect provider (AUTH_ISSUER) */
  tokens?: TokenVerifier;
  /** where a client finds how to get a token (RFC 9728), named in every 401's WWW-Authenticate */
  resourceMetadataUrl?: string;
}

/** Keys checked, kept until a key changes anywhere (revocations are rare) or the cache is full. */
const KEY_CACHE_MAX = 10_000;
/** A header naming the tenant the operator acts in (an id or a name). */
const TENANT_HEADER = 'x-tenant-id';

/**
 * Who sends a request (docs/security.md): the operator (ADMIN_API_KEY, or anyone on a loopback API
 * without keys), the holder of API_KEY (the tenant `default`), or the holder of a key issued by
 * POST /v1/keys. Undefined: the credentials are missing or refused (401).
 */
export class Principals {
  private readonly isAdminKey: (token: string) => boolean;
  private readonly isApiKey: (token: string) => boolean;
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly tenantIds = new Map<string, string>();
  private stopListening: (() => void) | undefined;
  readonly operatorHint: string;

  constructor(private readonly opts: PrincipalOptions) {
    this.isAdminKey = sameKey(opts.adminApiKey);
    this.isApiKey = sameKey(opts.apiKey);
    this.operatorHint = opts.adminApiKey
      ? 'send the admin key ("Authorization: Bearer <ADMIN_API_KEY>")'
      : 'this API listens on a non-loopback address and has no ADMIN_API_KEY, so nobody may do it through the API';
  }

  /** The WWW-Authenticate of a 401: where a client learns how to sign in, when tokens are on. */
  get challenge(): string {
    return this.opts.resourceMetadataUrl ? `Bearer resource_metadata="${this.opts.resourceMetadataUrl}"` : 'Bearer';
  }

  /** Whether requests must carry credentials (API_KEY or AUTH_ISSUER is set). */
  get keyRequired(): boolean {
    return Boolean(this.opts.apiKey) || this.opts.tokens !== undefined;
  }

  async callerOf(request: FastifyRequest): Promise<Caller | undefined> {
    const token = bearerToken(request);
    if (token !== undefined && this.isAdminKey(token)) return this.operator(request, 'admin key');
    // API_KEY keeps its meaning: on a loopback API without ADMIN_API_KEY its holder is the operator too.
    if (token !== undefined && this.isApiKey(token)) {
      return apiKeyCaller(this.opts.everyCallerIsOperator, this.operatorHint);
    }
    if (token !== undefined && token.startsWith('ak_')) return this.issuedKey(request, token);
    if (token !== undefined && this.opts.tokens) return this.tokenCaller(request, token, this.opts.tokens);
    if (this.keyRequired) return undefined;
    // A loopback API without keys: local development (npm start); a token it does not know is ignored, as before keys.
    return this.opts.everyCallerIsOperator
      ? this.operator(request, 'local')
      : this.tenantCaller(DEFAULT_TENANT_ID, { id: 'anonymous', name: 'anonymous' }, TENANT_ROLES, false);
  }

  close(): void {
    this.stopListening?.();
  }

  private async issuedKey(request: FastifyRequest, token: string): Promise<Caller | undefined> {
    const key = await this.validKey(token);
    if (!key) return undefined;
    const caller = keyCaller(key, this.operatorHint);
    // A key that holds operate acts, like the operator, in the tenant X-Tenant-Id names.
    return caller.isOperator ? { ...await this.operator(request, key.name), principal: caller.principal } : caller;
  }

  /** A token's tenant must be one the engine knows (403 otherwise: the token is good, the tenant is not here). */
  private async tokenCaller(request: FastifyRequest, token: string, tokens: TokenVerifier): Promise<Caller | undefined> {
    const identity = await tokens.verify(token);
    if (!identity) return undefined;
    const tenant = await this.tenantByName(identity.tenantName);
    const principal = { id: `sub:${identity.subject}`, name: identity.name };
    if (identity.roles.includes('operate')) {
      const header = request.headers[TENANT_HEADER];
      return { ...await this.operator(request, identity.name), ...(header ? {} : { tenantId: tenant }), principal };
    }
    return this.tenantCaller(tenant, principal, identity.roles, false);
  }

  private async tenantByName(name: string): Promise<string> {
    const known = this.tenantIds.get(`name:${name}`);
    if (known) return known;
    const tenant = name.length <= 200 ? await findTenant(this.opts.db, name) : undefined;
    if (!tenant || tenant.name !== name) {
      throw new EngineError('forbidden', `The token's tenant ${name.slice(0, 200)} is not one of this engine's`);
    }
    if (this.tenantIds.size < KEY_CACHE_MAX) this.tenantIds.set(`name:${name}`, tenant.id);
    return tenant.id;
  }

  private async validKey(token: string): Promise<ApiKeyRecord | undefined> {
    const cacheKey = digest(token).toString('base64');
    const cached = this.keys.get(cacheKey);
    if (cached && (cached.expiresAt === null || Date.parse(cached.expiresAt) > Date.now())) return cached;
    this.keys.delete(cacheKey);
    const key = await findValidKey(this.opts.db, token);
    if (!key) return undefined;
    if (this.keys.size >= KEY_CACHE_MAX) this.keys.clear();
    // Listened for from the first key kept: an engine of API_KEY and ADMIN_API_KEY alone is not woken
    // by key changes. Changes missed until the LISTEN begins are reported as such, which clears the cache.
    this.stopListening ??= this.opts.changes.onChange(() => this.keys.clear(), ['keys']);
    this.keys.set(cacheKey, key);
    return key;
  }

  private tenantCaller(tenantId: string, principal: Caller['principal'], roles: readonly Role[], isOperator: boolean): Caller {
    return { tenantId, principal, roles, isOperator, operatorHint: this.operatorHint };
  }

  /** The operator acts in the tenant X-Tenant-Id names (an id or a name), `default` without one. */
  private async operator(request: FastifyRequest, name: string): Promise<Caller> {
    const tenantId = await this.tenantNamed(request.headers[TENANT_HEADER]);
    return { ...operatorCaller(tenantId, name), operatorHint: this.operatorHint };
  }

  private async tenantNamed(header: string | string[] | undefined): Promise<string> {
    if (header === undefined || header === '') return DEFAULT_TENANT_ID;
    const ref = Array.isArray(header) ? header[0] : header;
    const known = this.tenantIds.get(ref);
    if (known) return known;
    const tenant = ref.length <= 200 ? await findTenant(this.opts.db, ref) : undefined;
    if (!tenant) {
      throw new EngineError('validation', `X-Tenant-Id: no tenant has the id or name ${ref.slice(0, 200)}`, { field: 'X-Tenant-Id' });
    }
    // Tenants are never renamed or removed, so what a name meant stays true.
    if (this.tenantIds.size < KEY_CACHE_MAX) this.tenantIds.set(ref, tenant.id);
    return tenant.id;
  }
}
