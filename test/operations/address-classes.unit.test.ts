import { classifyAddress } from '../../platform/net/address-classes';
import { refusedClass } from '../../platform/net/address-guard';

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
