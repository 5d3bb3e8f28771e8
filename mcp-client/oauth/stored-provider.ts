import { randomBytes } from 'node:crypto';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/client';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { Integration, OAuthSettings } from '../../core/integration';
import type { OAuthRecord, OAuthRecords } from '../../core/oauth';

/**
 * The SDK's authorization client reads and writes its state (client registration, tokens, PKCE
 * verifier, discovery) through a provider: this one keeps it where the composition root says
 * (OAuthRecords: the database's). oauth-provider.ts decides when a flow starts.
 */

export const CLIENT_NAME = 'durable-agent-engine';

export function oauthSettings(integration: Integration): OAuthSettings | undefined {
  return integration.transport.type === 'http' ? integration.transport.auth : undefined;
}

/** Seconds from the token response as an absolute time, so every worker reads the same expiry. */
const expiryOf = (tokens: OAuthTokens): number | undefined =>
  typeof tokens.expires_in === 'number' && tokens.expires_in > 0 ? Date.now() + tokens.expires_in * 1000 : undefined;

export class StoredOAuthProvider implements OAuthClientProvider {
  authorizationUrl?: URL;
  verifier?: string;

  constructor(
    private readonly records: OAuthRecords,
    private readonly integration: Integration,
    public record: OAuthRecord,
    private readonly flow: {
      redirectUrl: string; state?: string; codeVerifier?: string;
      /** while a new authorization starts, the stored tokens (and status) stay as they are */
      preserve?: { tokens?: OAuthTokens; accessExpiresAt?: number; status: 'required' | 'authorized' | 'expired' };
    },
  ) {}

  private get settings(): OAuthSettings {
    return oauthSettings(this.integration) ?? { type: 'oauth' };
  }

  get redirectUrl(): string {
    return this.flow.redirectUrl;
  }

  get clientMetadataUrl(): string | undefined {
    return this.settings.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { scopes, clientSecret } = this.settings;
    return {
      client_name: CLIENT_NAME,
      redirect_uris: [this.flow.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: clientSecret ? 'client_secret_post' : 'none',
      ...(scopes?.length ? { scope: scopes.join(' ') } : {}),
    };
  }

  state(): string {
    return this.flow.state ?? randomBytes(32).toString('base64url');
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    if (this.record.client) return this.record.client;
    const { clientId, clientSecret } = this.settings;
    return clientId ? { client_id: clientId, ...(clientSecret ? { client_secret: clientSecret } : {}) } : undefined;
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    this.record = { ...this.record, client, redirectUrl: this.flow.redirectUrl };
    await this.persist();
  }

  tokens(): OAuthTokens | undefined {
    return this.record.tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    // A refresh response may leave the refresh token out: the old one stays good (RFC 6749 6).
    const refresh = tokens.refresh_token ?? this.record.tokens?.refresh_token;
    const kept = { ...tokens, ...(refresh ? { refresh_token: refresh } : {}) };
    this.record = { ...this.record, tokens: kept, accessExpiresAt: expiryOf(tokens) };
    await this.persist();
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.flow.codeVerifier) throw new Error('no authorization is in progress');
    return this.flow.codeVerifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const r = { ...this.record };
    if (scope === 'all' || scope === 'client') delete r.client;
    if (scope === 'all' || scope === 'tokens') { delete r.tokens; delete r.accessExpiresAt; }
    if (scope === 'all' || scope === 'discovery') delete r.discovery;
    this.record = r;
    await this.persist();
  }

  async saveDiscoveryState(discovery: OAuthDiscoveryState): Promise<void> {
    this.record = { ...this.record, discovery };
    await this.persist();
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.record.discovery;
  }

  private persist(): Promise<void> {
    const keep = this.flow.preserve;
    if (!keep) return this.records.write(this.integration.id, this.record);
    const { tokens, accessExpiresAt, status } = keep;
    return this.records.write(this.integration.id, { ...this.record, tokens, accessExpiresAt }, status);
  }
}
