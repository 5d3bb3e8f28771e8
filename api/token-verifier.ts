import type { JWTPayload } from 'jose' with { 'resolution-mode': 'import' };
import { EngineError } from '../core/engine-error';
import { ROLES, type Role } from '../core/tenancy';
import { jose, type JoseModule } from '../platform/jose';
import type { TokenAuthConfig } from '../platform/token-auth-config';

/** Signatures a token may carry: asymmetric only (no `none`, no HMAC, whose secret would be the public key). */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/** `exp` and `nbf` are checked with this much leeway for clocks apart. */
const LEEWAY_S = 60;
/** A token longer than this is refused unread. */
const MAX_TOKEN_CHARS = 16_384;

export interface TokenIdentity {
  /** `sub` */
  subject: string;
  /** a name a person recognises: `name`, `preferred_username`, `email`, else `sub` */
  name: string;
  /** the tenant claim's value: a tenant's name */
  tenantName: string;
  roles: Role[];
}

type RemoteKeys = ReturnType<JoseModule['createRemoteJWKSet']>;

/**
 * Checks JWTs from the operator's OpenID Connect provider (AUTH_ISSUER): the signature against the
 * issuer's JWKS (found through its discovery document, cached, fetched again for an unknown `kid`),
 * `iss`, `aud`, `exp` and `nbf`. The claims then name the tenant and the roles; `operate` comes
 * from a token only when AUTH_OPERATOR_ROLE names the roles claim's value that grants it.
 */
export class TokenVerifier {
  private keys: Promise<RemoteKeys> | undefined;

  constructor(private readonly config: TokenAuthConfig) {}

  /** The token's identity; undefined when the token is not one of the issuer's for this audience. */
  async verify(token: string): Promise<TokenIdentity | undefined> {
    if (token.length > MAX_TOKEN_CHARS || token.split('.').length !== 3) return undefined;
    const { jwtVerify, errors } = await jose();
    const keys = await this.remoteKeys().catch((err: unknown) => {
      throw new EngineError('unavailable', `The identity provider cannot be reached to check the token: ${(err as Error).message}`);
    });
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: this.config.issuer, audience: this.config.audience, algorithms: ASYMMETRIC,
        clockTolerance: LEEWAY_S, requiredClaims: ['exp', 'sub'],
      });
      return this.identity(payload);
    } catch (err) {
      // The provider's keys out of reach is not the token's fault: try again shortly.
      if (err instanceof errors.JWKSTimeout || !(err instanceof errors.JOSEError)) {
        throw new EngineError('unavailable', 'The identity provider\'s keys cannot be fetched to check the token');
      }
      return undefined;
    }
  }

  private identity(payload: JWTPayload): TokenIdentity | undefined {
    const tenantName = payload[this.config.tenantClaim];
    if (typeof tenantName !== 'string' || !payload.sub) return undefined;
    const named = [payload.name, payload.preferred_username, payload.email].find((v): v is string => typeof v === 'string');
    const roles = this.roles(payload[this.config.rolesClaim]);
    return { subject: payload.sub, name: (named ?? payload.sub).slice(0, 200), tenantName, roles };
  }

  private roles(claim: unknown): Role[] {
    const values = Array.isArray(claim) ? claim.filter((v): v is string => typeof v === 'string')
      : typeof claim === 'string' ? claim.split(' ') : [];
    const granted = values.filter((v): v is Role => (ROLES as string[]).includes(v) && v !== 'operate');
    if (this.config.operatorRole !== undefined && values.includes(this.config.operatorRole)) granted.push('operate');
    return [...new Set(granted)];
  }

  /** The issuer's keys, from the jwks_uri its discovery document names (which must name this issuer). */
  private remoteKeys(): Promise<RemoteKeys> {
    this.keys ??= this.discover();
    this.keys.catch(() => { this.keys = undefined; });
    return this.keys;
  }

  private async discover(): Promise<RemoteKeys> {
    const { createRemoteJWKSet } = await jose();
    const url = `${this.config.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000), redirect: 'error' });
    if (!res.ok) throw new Error(`the issuer's discovery document answered ${res.status}`);
    const doc = await res.json() as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== this.config.issuer || typeof doc.jwks_uri !== 'string') {
      throw new Error('the discovery document names another issuer or no jwks_uri');
    }
    // A new kid is looked up at most every 5 s (a rotation is seen at once; a flood of unknown kids is not a flood of fetches).
    return createRemoteJWKSet(new URL(doc.jwks_uri), { cooldownDuration: 5_000, cacheMaxAge: 10 * 60_000, timeoutDuration: 10_000 });
  }
}
