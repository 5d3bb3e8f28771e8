import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createProviders } from '../../llm/providers';
import { classifyLlmError } from '../../llm/errors';
import { AddressRefusedError, guardedFetch } from '../../platform/net/address-guard';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';

/*
 * No test here sends a packet to a non-loopback address: every refusal happens in the connector,
 * before connect(), and the only servers that answer are local ones. Which addresses are refused
 * is address-classes.unit.test.ts's.
 */
describe('guarded fetch', () => {
  let server: http.Server;
  let base: string;
  let connections = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/to-metadata') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end('hello');
    });
    server.on('connection', () => {
      connections += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('loopback is allowed by default', async () => {
    const res = await guardedFetch()(`${base}/`);
    expect(await res.text()).toBe('hello');
  });

  test('its responses are the global Response (the MCP SDK reads OAuth error bodies only from those)', async () => {
    const res = await guardedFetch()(`${base}/`);
    expect(res).toBeInstanceOf(Response);
    expect(res.url).toBe(`${base}/`);
    expect(res.headers.get('content-type')).toBe('text/plain');
    await res.text();
  });

  test('BLOCK_PRIVATE_NETWORKS refuses 127.0.0.1, [::1] and localhost before connecting', async () => {
    const before = connections;
    const fetch = guardedFetch({ blockPrivateNetworks: true });
    const port = new URL(base).port;
    await expect(fetch(`${base}/`)).rejects.toThrow('connection to 127.0.0.1 refused: loopback addresses are refused because BLOCK_PRIVATE_NETWORKS is on');
    await expect(fetch(`http://[::1]:${port}/`)).rejects.toThrow(/connection to ::1 refused: loopback addresses/);
    // A name is refused after DNS resolution.
    await expect(fetch(`http://localhost:${port}/`)).rejects.toThrow(/connection to localhost \((127\.0\.0\.1|::1)\) refused: loopback addresses/);
    expect(connections).toBe(before);
  });

  test('metadata and link-local literals, mapped forms included, are refused', async () => {
    const fetch = guardedFetch();
    await expect(fetch('http://169.254.169.254/latest/meta-data/')).rejects.toBeInstanceOf(AddressRefusedError);
    await expect(fetch('http://[::ffff:169.254.169.254]/')).rejects.toThrow(/refused: link-local addresses/);
    for (const embedded of ['2002:a9fe:a9fe::', '64:ff9b:1::a9fe:a9fe', '::ffff:0:a9fe:a9fe', '2001:0:4136:e378:8000:63bf:5601:5601']) {
      await expect(fetch(`http://[${embedded}]/`)).rejects.toThrow(`connection to ${embedded} refused: link-local addresses`);
    }
    await expect(fetch('http://[fd00:ec2::254]/')).rejects.toThrow(/refused: cloud metadata addresses are never a target/);
    await expect(fetch('http://100.100.100.200/')).rejects.toThrow(/refused: cloud metadata addresses are never a target/);
  });

  test('a redirect to a metadata address is refused too', async () => {
    await expect(guardedFetch()(`${base}/to-metadata`)).rejects.toThrow('connection to 169.254.169.254 refused: link-local addresses');
  });

  test('an LLM base URL at the metadata address fails for good, with the reason', async () => {
    const providers = createProviders({ readApiKey: () => undefined });
    const failure = await providers.openai!.complete({
      model: { provider: 'openai', name: 'm', baseUrl: 'http://169.254.169.254/v1' },
      messages: [{ role: 'user', content: 'hi' }], tools: [], turn: 1, step: 0, signal: new AbortController().signal,
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(AddressRefusedError);
    expect(classifyLlmError(failure)).toMatchObject({
      type: 'LlmConfigError', retryable: false, message: expect.stringContaining('169.254.169.254 refused'),
    });
  });
});

describe('an MCP HTTP integration at the metadata address', () => {
  let engine: Engine;
  let app: FastifyInstance;

  beforeAll(async () => {
    ({ engine, app } = await startApiEngine());
  });
  afterAll(() => stopApiEngine({ engine, app }));

  test('is refused with a clear error when its capabilities are listed', async () => {
    const created = await app.inject({
      method: 'POST', url: '/v1/integrations',
      payload: { name: `metadata-${randomUUID().slice(0, 8)}`, transport: { type: 'http', url: 'http://169.254.169.254/mcp' } },
    });
    expect(created.statusCode).toBe(201);
    const res = await app.inject({ method: 'GET', url: `/v1/integrations/${created.json().id}/capabilities` });
    expect(res.statusCode).toBe(502);
    expect(res.json().detail).toMatch(
      /is unreachable: .*connection to 169\.254\.169\.254 refused: link-local addresses \(where cloud metadata endpoints live\) are never a target of the engine/,
    );
  });
});
