import { createSign, generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a Temporal server with authorization trusts: an RSA key whose public half it reads as a JWKS
 * (`global.authorization.jwtKeyProvider.keySourceURIs`), and tokens signed with it whose
 * `permissions` claim gives roles (`default:write`, `temporal-system:admin`), as its default claim
 * mapper reads them. Clients send a token as their API key (`Authorization: Bearer …`).
 */
export interface JwtIssuer {
  jwksUrl: string;
  token(permissions: string[]): string;
  close(): Promise<void>;
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

export async function startJwtIssuer(): Promise<JwtIssuer> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();
  const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }] });
  const server = http.createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const token = (permissions: string[]) => {
    const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
    const now = Math.floor(Date.now() / 1000);
    const payload = base64url(JSON.stringify({ sub: 'engine-test', permissions, iat: now, exp: now + 3600 }));
    const signature = createSign('RSA-SHA256').update(`${header}.${payload}`).sign(privateKey);
    return `${header}.${payload}.${base64url(signature)}`;
  };
  return {
    jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`,
    token,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      // The server's key fetcher keeps its connection alive.
      server.closeAllConnections();
    }),
  };
}
