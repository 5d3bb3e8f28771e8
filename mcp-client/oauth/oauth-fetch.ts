import { extractWWWAuthenticateParams } from '@modelcontextprotocol/client';
import type { FetchLike } from '@modelcontextprotocol/client';
import type { AuthChallenge, OAuthRecord, OAuthRecords } from '../../core/oauth';
import type { Integration } from '../../core/integration';
import type { Logger } from '../../platform/logger';
import { AuthorizationRequiredError, refreshTokens } from './oauth-provider';
import { oauthSettings } from './stored-provider';

/**
 * How a worker's requests to an OAuth-protected MCP server carry the access token: each request
 * gets `Authorization: Bearer …`; a token within a minute of its expiry is refreshed first, and a
 * 401 refreshes once and retries once. Refreshes are serialised per integration across workers
 * (an advisory lock), so a rotated refresh token is never lost. A server that answers 401 with
 * resource metadata to an integration configured without OAuth marks it as needing authorization.
 */

/** Refresh this long before the expiry the token response announced. */
const REFRESH_MARGIN_MS = 60_000;

export interface OAuthFetchOptions {
  /** where the tokens are kept (the database's, handed in by the composition root) */
  records: OAuthRecords;
  logger: Logger;
}

interface Held {
  accessToken: string;
  expiresAt?: number;
}

const held = (record: OAuthRecord | undefined): Held | undefined =>
  record?.tokens ? { accessToken: record.tokens.access_token, expiresAt: record.accessExpiresAt } : undefined;

const fresh = (h: Held | undefined): h is Held =>
  h !== undefined && (h.expiresAt === undefined || h.expiresAt - REFRESH_MARGIN_MS > Date.now());

/** The WWW-Authenticate of a refusal: a 401, or a 403 that asks for more scope (step-up). */
function challengeOf(res: Response): (AuthChallenge & { insufficientScope: boolean }) | undefined {
  if (res.status !== 401 && res.status !== 403) return undefined;
  const params = extractWWWAuthenticateParams(res);
  const insufficientScope = params.error === 'insufficient_scope';
  if (res.status === 403 && !insufficientScope) return undefined;
  return { resourceMetadataUrl: params.resourceMetadataUrl?.toString(), scope: params.scope, insufficientScope };
}

function withBearer(init: RequestInit | undefined, token: string): RequestInit {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/** The fetch an integration's transport uses: the base fetch (address rules) with its authorization. */
export function authorizedFetch(options: OAuthFetchOptions, integration: Integration, base: FetchLike): FetchLike {
  if (integration.transport.type !== 'http') return base;
  const bearer = new BearerRequests(options, integration, base);
  return (url, init) => bearer.fetch(url, init);
}

type Url = Parameters<FetchLike>[0];

/** One integration's requests, with the token the engine holds for it. */
class BearerRequests {
  private readonly records: OAuthRecords;
  private readonly log: Logger;
  private current: Held | undefined;
  private protectedByOAuth: Promise<boolean> | undefined;

  constructor(options: OAuthFetchOptions, private readonly integration: Integration, private readonly base: FetchLike) {
    this.records = options.records;
    this.log = options.logger.child({ integrationId: integration.id });
  }

  async fetch(url: Url, init?: RequestInit): Promise<Response> {
    this.protectedByOAuth ??= oauthSettings(this.integration) ? Promise.resolve(true) : this.records.exists(this.integration.id);
    if (!(await this.protectedByOAuth)) return this.plain(url, init);
    const first = await this.token();
    // Without tokens the request goes out bare: the server's refusal says where to authorize.
    const res = await this.base(url, first ? withBearer(init, first.accessToken) : init);
    const challenge = challengeOf(res);
    if (!challenge) return res;
    if (!first || challenge.insufficientScope) return this.refused(res, challenge);
    return this.renewAndRetry(url, init, res, challenge, first);
  }

  /** A request of an integration the engine holds no OAuth for, watched for a server that asks for it. */
  private async plain(url: Url, init?: RequestInit): Promise<Response> {
    const res = await this.base(url, init);
    const challenge = challengeOf(res);
    if (res.status === 401 && challenge?.resourceMetadataUrl) {
      this.log.warn('the server asks for OAuth authorization');
      return this.refused(res, challenge);
    }
    return res;
  }

  /** The held token was refused: renewed once, and the request sent once more. */
  private async renewAndRetry(url: Url, init: RequestInit | undefined, res: Response, challenge: AuthChallenge, first: Held)
    : Promise<Response> {
    await res.body?.cancel();
    await this.records.recordChallenge(this.integration.id, challenge);
    this.current = await this.renew(first.accessToken);
    const again = await this.base(url, withBearer(init, this.current.accessToken));
    const still = challengeOf(again);
    if (!still) return again;
    // A fresh token refused too: revoked at the provider, or short of scope. Only a person can mend that.
    this.current = undefined;
    if (!still.insufficientScope) await this.records.markExpired(this.integration.id);
    return this.refused(again, still);
  }

  /** A refusal the engine cannot mend by itself: remember what the server asked for, and stop. */
  private async refused(res: Response, challenge: AuthChallenge): Promise<never> {
    await res.body?.cancel();
    await this.records.recordChallenge(this.integration.id, challenge);
    throw new AuthorizationRequiredError(this.integration.name);
  }

  /** The token to send: the held one, the stored one, or a refreshed one; undefined when the engine holds none. */
  private async token(): Promise<Held | undefined> {
    if (fresh(this.current)) return this.current;
    const row = await this.records.read(this.integration.id);
    const stored = held(row?.record);
    if (!row?.record.tokens) return undefined;
    if (row.status === 'authorized' && fresh(stored)) return (this.current = stored);
    return (this.current = await this.renew(stored?.accessToken));
  }

  /** The stored tokens, renewed under the lock when they are about to expire or `stale` was refused. */
  private async renew(stale?: string): Promise<Held> {
    const renewed = await this.records.withRefreshLock(this.integration.id, (locked) => this.renewLocked(locked, stale));
    if (renewed === 'refused') throw new AuthorizationRequiredError(this.integration.name);
    return renewed;
  }

  private async renewLocked(locked: OAuthRecords, stale: string | undefined): Promise<Held | 'refused'> {
    const row = await locked.read(this.integration.id);
    const stored = held(row?.record);
    // Another worker (or this one, a moment ago) refreshed already: its tokens are the ones to use.
    if (row?.status === 'authorized' && fresh(stored) && stored.accessToken !== stale) return stored;
    if (!row || !row.record.tokens) return 'refused';
    try {
      const next = await refreshTokens(locked, this.integration, row.record, this.base);
      this.log.info('OAuth access token refreshed');
      return held(next)!;
    } catch (err) {
      if (!(err instanceof AuthorizationRequiredError)) throw err;
      // The row says why the integration stopped working; the refused tokens are of no more use.
      await locked.write(this.integration.id, { ...row.record, tokens: undefined, accessExpiresAt: undefined }, 'expired');
      this.log.warn('OAuth refresh refused: the integration needs authorization again');
      return 'refused';
    }
  }
}
