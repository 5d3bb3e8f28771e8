import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { OAuthSettings } from '../../core/integration';
import { findIntegration, insertIntegration } from '../../store/integrations/integrations';
import { migrate } from '../../store/migrations';
import { createPool } from '../../store/pool';
import { createLogger } from '../../platform/logger';
import { connectIntegration } from '../../mcp-client/connections/connect';
import { beginAuthorization, completeAuthorization, isAuthorizationRequired } from '../../mcp-client/oauth/oauth-provider';
import { guardedFetch } from '../../platform/net/address-guard';
import { installSecretKeys } from '../../platform/secrets/key-ring';
import { keyRing, newSecretKey } from '../../platform/secrets/secret-box';
import { oauthRecords } from '../../store/integrations/oauth';
import { callToolInRounds } from '../../mcp-client/tool-calls/input-rounds';
import type { ElicitHandler } from '../../mcp-client/connections/connect';

/**
 * The client command the MCP conformance client scenarios run (see client-run.sh):
 * `client.ts <server url>`. It is a worker's connect path, not a copy of it: an integration on
 * protocol auto lives in a database (DATABASE_URL), its tokens sealed there; connecting fails with
 * "needs authorization" where a server asks for it; the operator's step (POST …/authorize) runs as
 * the API's worker runs it, a headless browser follows the authorization URL (the suite's
 * authorization server approves at once), the callback's exchange stores the tokens; then it does
 * what a run does with a server: list the tools and call each, with arguments made from its input
 * schema, through the engine's input rounds (mcp-client/tool-calls/input-rounds.ts), whose questions are
 * accepted with the schema's defaults.
 */

/** The scenario's client ID metadata document (SEP-991), which auth/basic-cimd expects the client to present. */
const CONFORMANCE_CIMD_URL = 'https://conformance-test.local/client-metadata.json';
/** Never reached: the headless browser reads the code from the redirect. */
const REDIRECT_URL = 'http://127.0.0.1:9/oauth/callback';

async function main(): Promise<void> {
  const serverUrl = process.argv[process.argv.length - 1];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as { client_id?: string; client_secret?: string };
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn', 'conformance-client', { pretty: false });
  installSecretKeys(keyRing(newSecretKey()));
  const db = createPool(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', logger, 4);
  const fetch = guardedFetch();
  const options = { groupsDir: path.join(os.tmpdir(), 'conformance-groups'), logger, timeoutMs: 20_000, fetch, oauth: { records: oauthRecords(db), logger } };
  let client: Client | undefined;
  let id: string | undefined;
  try {
    await migrate(db);
    const auth: OAuthSettings = {
      type: 'oauth',
      ...(context.client_id ? { clientId: context.client_id } : {}),
      ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
      ...(scenario === 'auth/basic-cimd' ? { clientMetadataUrl: CONFORMANCE_CIMD_URL } : {}),
    };
    const created = await insertIntegration(db, { name: `conformance-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: serverUrl, auth } });
    id = created.id;
    /** The operator's authorization: begun on a worker, approved in a (headless) browser, completed at the callback. */
    const authorize = async () => {
      const integration = (await findIntegration(db, created.id))!;
      const begun = await beginAuthorization(oauthRecords(db), integration, REDIRECT_URL, fetch);
      const res = await fetch(begun.authorizationUrl, { redirect: 'manual' });
      await res.body?.cancel();
      const location = res.headers.get('location');
      if (!location) throw new Error(`the authorization server answered ${res.status} without a redirect`);
      const back = new URL(location);
      if (back.searchParams.get('state') !== begun.state) throw new Error('the redirect came back with another state');
      const code = back.searchParams.get('code');
      if (!code) throw new Error(`the redirect has no code: ${back.searchParams.get('error') ?? 'no error either'}`);
      // As the callback route does: the issuer the redirect names goes with the code (RFC 9207).
      const iss = back.searchParams.get('iss') ?? undefined;
      await completeAuthorization(oauthRecords(db), integration, { code, iss, codeVerifier: begun.codeVerifier, redirectUrl: REDIRECT_URL }, fetch);
    };
    /** What a worker does for each request, with the operator stepping in once when told an authorization is needed. */
    const asWorker = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
      for (let attempt = 1; ; attempt++) {
        try {
          client ??= await connectIntegration((await findIntegration(db, created.id))!, options);
          return await fn(client);
        } catch (err) {
          if (!isAuthorizationRequired(err) || attempt > 2) throw err;
          await client?.close().catch(() => undefined);
          client = undefined;
          await authorize();
        }
      }
    };
    const { tools } = await asWorker((c) => c.listTools());
    for (const tool of tools) {
      await asWorker((c) => callToolInRounds(c, { name: tool.name, arguments: sampleArguments(tool.inputSchema as Schema) }, { timeout: 10_000 }, acceptDefaults));
    }
  } finally {
    await client?.close().catch(() => undefined);
    if (id) await db.query('DELETE FROM integrations WHERE id = $1', [id]).catch(() => undefined);
    await db.end();
  }
}

type Schema = { type?: unknown; properties?: Record<string, Schema>; required?: string[]; default?: unknown; enum?: unknown[] };

/** A value for each required property (and each with a default), as an LLM would fill them in. */
function sampleArguments(schema: Schema): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (property.default !== undefined) args[name] = property.default;
    else if (schema.required?.includes(name)) args[name] = sampleValue(property);
  }
  return args;
}

function sampleValue(schema: Schema): unknown {
  if (schema.enum?.length) return schema.enum[0];
  if (schema.type === 'number' || schema.type === 'integer') return 1;
  if (schema.type === 'boolean') return true;
  if (schema.type === 'object') return sampleArguments(schema);
  if (schema.type === 'array') return [];
  return 'conformance';
}

/** A person who accepts what a question proposes: its defaults, or a sample of each required field. */
const acceptDefaults: ElicitHandler = async (params) => {
  const schema = (params as { requestedSchema?: Schema }).requestedSchema;
  return schema ? { action: 'accept', content: sampleArguments(schema) as Record<string, string> } : { action: 'accept' };
};

main().then(() => process.exit(0), (err: unknown) => {
  process.stderr.write(`client failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
