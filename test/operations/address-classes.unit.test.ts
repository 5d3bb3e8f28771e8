import { classifyAddress } from '../../platform/net/address-classes';
import { AddressRefusedError, refusedClass } from '../../platform/net/address-guard';

/* Which addresses the engine refuses to connect to, decided on the literal alone: no packet is sent. */
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

  test.each([
    // the edges of each IPv4 range, one address inside and one outside
    ['10.255.255.255', 'private'], ['11.0.0.0', 'public'], ['9.255.255.255', 'public'],
    ['172.15.255.255', 'public'], ['172.16.0.0', 'private'],
    ['192.167.255.255', 'public'], ['192.168.255.255', 'private'], ['192.169.0.0', 'public'],
    ['100.63.255.255', 'public'], ['100.64.0.0', 'private'], ['100.127.255.255', 'private'], ['100.128.0.0', 'public'],
    ['198.17.255.255', 'public'], ['198.18.0.0', 'private'], ['198.19.255.255', 'private'], ['198.20.0.0', 'public'],
    ['126.255.255.255', 'public'], ['128.0.0.0', 'public'], ['0.255.255.255', 'unspecified'], ['1.0.0.0', 'public'],
    ['169.254.255.255', 'link-local'], ['169.255.0.0', 'public'], ['100.100.100.201', 'private'],
    // and of the IPv6 ones
    ['fc00::1', 'private'], ['fbff::1', 'public'], ['fec0::1', 'private'], ['feff::1', 'private'], ['fe7f::1', 'public'],
    ['::ffff:7f00:1', 'loopback'], ['::ffff:0.0.0.0', 'unspecified'], ['::2', 'unspecified'], // ::2 is the IPv4-compatible form of 0.0.0.2
  ])('range edge: %s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  test('a host name is not an address', () => {
    expect(classifyAddress('metadata.google.internal')).toBeUndefined();
    expect(classifyAddress('169.254.169.254.nip.io')).toBeUndefined();
  });

  test('metadata and link-local are refused always; loopback, private and unspecified only with BLOCK_PRIVATE_NETWORKS', () => {
    const open = { blockPrivateNetworks: false };
    const closed = { blockPrivateNetworks: true };
    for (const [address, kind] of [['169.254.169.254', 'link-local'], ['::ffff:169.254.169.254', 'link-local'], ['fd00:ec2::254', 'metadata'], ['100.100.100.200', 'metadata'], ['fe80::1', 'link-local']]) {
      expect(refusedClass(address, open)).toBe(kind);
      expect(refusedClass(address, closed)).toBe(kind);
    }
    for (const [address, kind] of [['127.0.0.1', 'loopback'], ['::1', 'loopback'], ['::ffff:127.0.0.1', 'loopback'], ['10.0.0.1', 'private'], ['192.168.0.10', 'private'], ['fd12::1', 'private'], ['0.0.0.0', 'unspecified']]) {
      expect(refusedClass(address, open)).toBeUndefined();
      expect(refusedClass(address, closed)).toBe(kind);
    }
    expect(refusedClass('8.8.8.8', closed)).toBeUndefined();
    // A name is judged by the addresses it resolves to, when the connection is made.
    expect(refusedClass('localhost', closed)).toBeUndefined();
  });
});

describe('the refusal message', () => {
  test('says which address was refused and why, naming the host when it is a name', () => {
    expect(new AddressRefusedError('100.100.100.200', '100.100.100.200', 'metadata').message)
      .toBe('connection to 100.100.100.200 refused: cloud metadata addresses are never a target of the engine');
    expect(new AddressRefusedError('169.254.169.254', '169.254.169.254', 'link-local').message)
      .toBe('connection to 169.254.169.254 refused: link-local addresses (where cloud metadata endpoints live) are never a target of the engine');
    expect(new AddressRefusedError('localhost', '127.0.0.1', 'loopback').message)
      .toBe('connection to localhost (127.0.0.1) refused: loopback addresses are refused because BLOCK_PRIVATE_NETWORKS is on');
    expect(new AddressRefusedError('db.internal', '10.1.2.3', 'private', 'the integration may not reach private networks').message)
      .toBe('connection to db.internal (10.1.2.3) refused: private network addresses are refused because the integration may not reach private networks');
  });

  test('is an error of its own kind, with a code the callers can tell apart', () => {
    const err = new AddressRefusedError('0.0.0.0', '0.0.0.0', 'unspecified');
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ name: 'AddressRefusedError', code: 'EADDRREFUSED_BY_POLICY', host: '0.0.0.0', address: '0.0.0.0', addressClass: 'unspecified' });
    expect(err.message).toBe('connection to 0.0.0.0 refused: unspecified addresses (they reach this host) are refused because BLOCK_PRIVATE_NETWORKS is on');
  });
});
