import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createProviders } from '../../llm/providers';
import { classifyLlmError } from '../../llm/errors';
import { classifyAddress } from '../../platform/net/address-classes';
import { AddressRefusedError, guardedFetch, refusedClass } from '../../platform/net/address-guard';
import type { Engine } from '../support/engine';
import { startApiEngine, stopApiEngine } from '../support/api-engine';

/*
 * No test here sends a packet to a non-loopback address: every refusal happens in the connector,
 * before connect(), and the only servers that answer are local ones.
 */
describe('address classification', () => {
  test.each([
    ['169.254.169.254', 'link-local'], ['169.254.0.1', 'link-local'], ['fe80::1', 'link-local'], ['[fe80::1%eth0]', 'link-local'],
    ['febf:ffff::1', 'link-local'], ['fd00:ec2::254', 'metadata'], ['FD00:EC2:0:0:0:0:0:254', 'metadata'], ['100.100.100.200', 'metadata'],
    // IPv4-mapped, -compatible and NAT64 forms of the same targets
    ['::ffff:169.254.169.254', 'link-local'], ['::ffff:a9fe:a9fe', 'link-local'], ['[::ffff:a9fe:a9fe]', 'link-local'],
    ['0:0:0:0:0:ffff:169.254.169.254', 'link-local'], ['::169.254.169.254', 'link-local'], ['64:ff9b::169.254.169.254', 'link-local'],
    ['::ffff:100.100.100.200', 'metadata'], ['::ffff:127.0.0.1', 'loopback'],
    // 6to4, SIIT (IPv4-translated), local-use NAT64 in each RFC 6052 layout, and Teredo (the client is the inverted tail)
    ['2002:a9fe:a9fe::', 'link-local'], ['2002:a9fe:a9fe:1::5', 'link-local'], ['2002:7f00:1::', 'loopback'], ['2002:0808:0808::1', 'public'],
    ['::ffff:0:169.254.169.254', 'link-local'], ['::ffff:0:a9fe:a9fe', 'link-local'], ['::ffff:0:10.0.0.1', 'private'], ['::ffff:0:8.8.8.8', 'public'],
    ['64:ff9b:1::a9fe:a9fe', 'link-local'], ['64:ff9b:1::169.254.169.254', 'link-local'], ['64:ff9b:1:a9fe:a9:fe00::', 'link-local'],
    ['64:ff9b:1:a9:fe:a9fe::', 'link-local'], ['64:ff9b:1:0:a9:fea9:fe00:0', 'link-local'], ['64:ff9b:1::6464:64c8', 'metadata'],
    ['64:ff9b:1::808:808', 'public'], ['64:ff9b:1::', 'unspecified'],
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'link-local'], ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'],
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'public'],
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['::1', 'loopback'], ['[::1]', 'loopback'],
    ['0.0.0.0', 'unspecified'], ['::', 'unspecified'],
    ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'], ['fd12:3456::1', 'private'], ['::ffff:10.1.2.3', 'private'],
    ['8.8.8.8', 'public'], ['172.32.0.1', 'public'], ['169.253.255.255', 'public'], ['2001:4860:4860::8888', 'public'], ['fe00::1', 'public'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  test('a host name is not an address', () => {
    expect(classifyAddress('metadata.google.internal')).toBeUndefined();
    expect(classifyAddress('169.254.169.254.nip.io')).toBeUndefined();
  });

  test('metadata and link-local are refused always; loopback and private only with BLOCK_PRIVATE_NETWORKS', () => {
    const open = { blockPrivateNetworks: false };
    const closed = { blockPrivateNetworks: true };
    for (const address of ['169.254.169.254', '::ffff:169.254.169.254', 'fd00:ec2::254', '100.100.100.200', 'fe80::1']) {
      expect(refusedClass(address, open)).toBeDefined();
      expect(refusedClass(address, closed)).toBeDefined();
    }
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '10.0.0.1', '192.168.0.10', 'fd12::1', '0.0.0.0']) {
      expect(refusedClass(address, open)).toBeUndefined();
      expect(refusedClass(address, closed)).toBeDefined();
    }
    expect(refusedClass('8.8.8.8', closed)).toBeUndefined();
  });
});

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
      messages: [{ role: 'user', content: 'hi' }], tools: [], turn: 1, signal: new AbortController().signal,
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
