import type { FastifyPluginAsync } from 'fastify';

const base = (publicUrl: string) => publicUrl.replace(/\/+$/, '');

/** RFC 9728's well-known address of /mcp's metadata (the path of the resource follows the well-known part). */
export const resourceMetadataUrl = (publicUrl: string) => `${base(publicUrl)}/.well-known/oauth-protected-resource/mcp`;

/**
 * With AUTH_ISSUER set, /mcp (and /v1, which takes the same tokens) is an OAuth protected resource:
 * its metadata (RFC 9728) tells a client such as an MCP client which authorization server issues
 * tokens for it, and for which resource (the audience tokens must carry). Outside /v1, without
 * credentials: it holds nothing secret, and a client reads it before it has a token.
 */
export const protectedResourceRoutes: FastifyPluginAsync<{ publicUrl: string; issuer: string }> = async (app, opts) => {
  const metadata = {
    resource: `${base(opts.publicUrl)}/mcp`,
    authorization_servers: [opts.issuer],
    scopes_supported: ['openid'],
    bearer_methods_supported: ['header'],
    resource_name: 'agent-engine',
  };
  for (const url of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    app.get(url, { schema: { hide: true } }, async (_request, reply) => reply.header('cache-control', 'public, max-age=300')
      .send(metadata));
  }
};
