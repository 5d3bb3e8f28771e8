import { EXIT, type CliContext } from './commands';

interface AuthorizationState {
  id: string; name: string; authorization: string; authorizedAt?: string; expiresAt?: string; scopes?: string[];
}

const POLL_MS = 1_000;

/**
 * `agent-engine integrations authorize <name>`: asks the API for the authorization URL, shows it
 * (and opens a browser when the machine has one), then waits until the authorization server's
 * redirect has reached the engine's callback and the integration reads as authorized.
 */
export async function integrationsAuthorizeCommand(ctx: CliContext, opts: { integration: string; json: boolean }): Promise<number> {
  const path = `/v1/integrations/${encodeURIComponent(opts.integration)}`;
  const before = await ctx.api.get<AuthorizationState>(path);
  const begun = await ctx.api.post<{ authorizationUrl: string; expiresAt: string; redirectUrl: string }>(`${path}/authorize`, {});
  ctx.err.write(`Open this URL to authorize ${before.name} (it comes back to ${begun.redirectUrl}):\n`);
  ctx.out.write(`${begun.authorizationUrl}\n`);
  if (ctx.openUrl && (await ctx.openUrl(begun.authorizationUrl))) ctx.err.write('(opened in your browser)\n');
  ctx.err.write('waiting for the authorization… (Ctrl-C stops waiting; the link stays good until it expires)\n');
  const deadline = Date.parse(begun.expiresAt);
  for (;;) {
    const now = await ctx.api.get<AuthorizationState>(path);
    if (now.authorization === 'authorized' && now.authorizedAt && now.authorizedAt !== before.authorizedAt) {
      if (opts.json) ctx.out.write(`${JSON.stringify(now, null, 2)}\n`);
      ctx.err.write(`${now.name} is authorized${now.scopes?.length ? ` (scopes: ${now.scopes.join(' ')})` : ''}\n`);
      return EXIT.ok;
    }
    if (Date.now() > deadline) {
      ctx.err.write(`the authorization of ${before.name} did not complete before its link expired; run the command again\n`);
      return EXIT.runNotCompleted;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
