import type { Env } from './env-schema';

/**
 * Tokens from the operator's OpenID Connect provider (docs/security.md#tokens-from-an-identity-provider):
 * on when AUTH_ISSUER is set. One audience serves REST and /mcp: AUTH_AUDIENCE, else PUBLIC_URL/mcp.
 */
export interface TokenAuthConfig {
  issuer: string;
  audience: string;
  /** the claim that holds the tenant's name */
  tenantClaim: string;
  /** the claim that holds the roles (an array, or a space-separated string) */
  rolesClaim: string;
  /** the value of the roles claim that grants `operate`; absent, no token grants it */
  operatorRole?: string;
  /** the provider's public client the console signs in with (authorization code + PKCE); absent, the console asks for a key only */
  consoleClientId?: string;
}

/** Undefined without AUTH_ISSUER; parseEnv has checked that PUBLIC_URL comes with it. */
export function tokenAuthConfig(e: Env): TokenAuthConfig | undefined {
  if (!e.AUTH_ISSUER || !e.PUBLIC_URL) return undefined;
  return {
    issuer: e.AUTH_ISSUER,
    audience: e.AUTH_AUDIENCE ?? `${e.PUBLIC_URL.replace(/\/+$/, '')}/mcp`,
    tenantClaim: e.AUTH_TENANT_CLAIM,
    rolesClaim: e.AUTH_ROLES_CLAIM,
    operatorRole: e.AUTH_OPERATOR_ROLE,
    consoleClientId: e.AUTH_CONSOLE_CLIENT_ID,
  };
}
