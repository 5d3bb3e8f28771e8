import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { JWK } from 'jose' with { 'resolution-mode': 'import' };
import { jose } from '../../platform/jose';

/** What test/fixtures/oidc-provider.mjs reads (see its header). */
export interface OidcProviderConfig {
  port?: number;
  keys: JWK[];
  clients: { client_id: string; client_secret: string; tenant: string; roles: string[] }[];
  publicClients?: { client_id: string; redirect_uris: string[] }[];
  accounts?: { id: string; name?: string; tenant: string; roles: string[] }[];
}

export interface OidcProvider {
  child: ChildProcess;
  issuer: string;
  dir: string;
}

/** An RS256 signing key for the provider. */
export async function signingKey(kid: string): Promise<JWK> {
  const { generateKeyPair, exportJWK } = await jose();
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

/** Starts the real OpenID provider of test/fixtures on loopback (on `config.port` when given, to come back at the same issuer). */
export async function startOidcProvider(config: OidcProviderConfig): Promise<OidcProvider> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'oidc-'));
  const file = path.join(dir, 'config.json');
  await writeFile(file, JSON.stringify(config));
  const script = path.join(__dirname, '..', 'fixtures', 'oidc-provider.mjs');
  const child = spawn(process.execPath, [script, file], { stdio: ['ignore', 'pipe', 'ignore'] });
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (data: Buffer) => resolve(data.toString()));
    child.once('exit', (code) => reject(new Error(`the OpenID provider exited (${code})`)));
  });
  return { child, issuer: (JSON.parse(line) as { issuer: string }).issuer, dir };
}

export async function stopOidcProvider(provider: OidcProvider | undefined): Promise<void> {
  if (!provider) return;
  const { child, dir } = provider;
  if (child.exitCode === null) await new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM'); });
  await rm(dir, { recursive: true, force: true });
}
