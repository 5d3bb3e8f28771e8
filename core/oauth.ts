import type { OAuthDiscoveryState, OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/client';

/**
 * What the engine keeps of an integration's MCP authorization (OAuth): the client it registered,
 * the tokens, and the authorization server it discovered. All of it is sealed under SECRETS_KEY,
 * bound to the integration; the API sees only the status, the expiry and the scopes.
 */
export interface OAuthRecord {
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  discovery?: OAuthDiscoveryState;
  /** the redirect URL the client was registered with: refreshes present the same client */
  redirectUrl?: string;
  /** when the access token expires (ms since the epoch), from expires_in at the time it was issued */
  accessExpiresAt?: number;
}

export type StoredStatus = 'required' | 'authorized' | 'expired';

/** What a server's refusal (401, or 403 insufficient_scope) said in WWW-Authenticate; not secret. */
export interface AuthChallenge {
  resourceMetadataUrl?: string;
  scope?: string;
}

/**
 * Where the MCP client keeps an integration's authorization: the composition root hands in the
 * database's (store/integrations/oauth.ts), so the client itself imports no storage code.
 */
export interface OAuthRecords {
  read(integrationId: string): Promise<{ status: StoredStatus; record: OAuthRecord } | undefined>;
  /** the status follows from the record's tokens unless given */
  write(integrationId: string, record: OAuthRecord, status?: StoredStatus): Promise<void>;
  readChallenge(integrationId: string): Promise<AuthChallenge | undefined>;
  recordChallenge(integrationId: string, challenge: AuthChallenge): Promise<void>;
  /** the tokens no longer work and could not be refreshed: an operator must authorize again */
  markExpired(integrationId: string): Promise<void>;
  exists(integrationId: string): Promise<boolean>;
  /**
   * Runs fn holding the integration's refresh lock, with records of that same transaction: two
   * workers refreshing at once take turns, so a rotated refresh token is never lost.
   */
  withRefreshLock<T>(integrationId: string, fn: (records: OAuthRecords) => Promise<T>): Promise<T>;
}
