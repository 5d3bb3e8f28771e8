import { isIP } from 'node:net';

/**
 * What kind of network an IP address belongs to, for deciding whether the engine may connect there.
 * `metadata` and `link-local` are where clouds answer with instance credentials; they are never a target.
 */
export type AddressClass = 'metadata' | 'link-local' | 'loopback' | 'private' | 'unspecified' | 'public';

/** Cloud metadata endpoints outside the link-local ranges (AWS over IPv6, Alibaba Cloud). */
const METADATA_V4 = new Set(['100.100.100.200']);
const METADATA_V6 = 'fd00:ec2::254';

type Range = [base: number, bits: number];
const ipv4Ranges: [AddressClass, Range[]][] = [
  ['link-local', [[0xa9fe0000, 16]]], // 169.254.0.0/16
  ['loopback', [[0x7f000000, 8]]], // 127.0.0.0/8
  ['unspecified', [[0x00000000, 8]]], // 0.0.0.0/8 reaches this host on Linux
  // 10/8, 172.16/12, 192.168/16, carrier-grade NAT 100.64/10, benchmarking 198.18/15
  ['private', [[0x0a000000, 8], [0xac100000, 12], [0xc0a80000, 16], [0x64400000, 10], [0xc6120000, 15]]],
];

function ipv4ToNumber(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function classifyIpv4(ip: string): AddressClass {
  if (METADATA_V4.has(ip)) return 'metadata';
  const n = ipv4ToNumber(ip);
  for (const [kind, ranges] of ipv4Ranges) {
    for (const [base, bits] of ranges) {
      const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
      if (((n & mask) >>> 0) === base) return kind;
    }
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (an embedded dotted IPv4 tail becomes two groups). */
function ipv6Groups(ip: string): number[] {
  let text = ip.toLowerCase().split('%')[0];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = ipv4ToNumber(dotted[1]);
    text = `${text.slice(0, -dotted[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const fill = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

const ipv4Text = (b: number[]) => b.join('.');

/**
 * Where a local-use NAT64 prefix (64:ff9b:1::/48, RFC 8215) of length 48, 56, 64 or 96 puts the
 * IPv4 address (RFC 6052), given the address's 16 bytes. Byte 8 (bits 64-71) is zero in the
 * shorter layouts, and so are the bytes after the IPv4 address; a layout whose reserved bytes are
 * not zero is not the one in use.
 */
const NAT64_LAYOUTS: { v4: number[]; zero: number[] }[] = [
  { v4: [6, 7, 9, 10], zero: [8, 11, 12, 13, 14, 15] },
  { v4: [7, 9, 10, 11], zero: [8, 12, 13, 14, 15] },
  { v4: [9, 10, 11, 12], zero: [8, 13, 14, 15] },
  { v4: [12, 13, 14, 15], zero: [] },
];

/**
 * The IPv4 addresses an IPv6 one may stand for: mapped (::ffff:a.b.c.d), SIIT (::ffff:0:a.b.c.d),
 * compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d, and each layout of the local-use 64:ff9b:1::/48),
 * 6to4 (2002:aabb:ccdd::/48) and Teredo (2001::/32, whose client address is the inverted last 32 bits).
 * Packets to them end up at that IPv4 address, so it decides the class.
 */
function embeddedIpv4(g: number[]): string[] {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const bytes = g.flatMap((x) => [x >> 8, x & 0xff]);
  const tail = ipv4Text(bytes.slice(12));
  if (zeros(0, 5) && g[5] === 0xffff) return [tail]; // mapped
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return [tail]; // SIIT
  if (zeros(0, 6) && (g[6] !== 0 || g[7] > 1)) return [tail]; // compatible (:: and ::1 are themselves)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return [tail]; // well-known NAT64
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0x0001) {
    return NAT64_LAYOUTS.filter((l) => l.zero.every((i) => bytes[i] === 0)).map((l) => ipv4Text(l.v4.map((i) => bytes[i])));
  }
  if (g[0] === 0x2002) return [ipv4Text(bytes.slice(2, 6))]; // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return [ipv4Text(bytes.slice(12).map((b) => b ^ 0xff))]; // Teredo
  return [];
}

/** From the class that is refused most to the one refused least. */
const STRICTNESS: AddressClass[] = ['metadata', 'link-local', 'loopback', 'unspecified', 'private', 'public'];

function classifyIpv6(ip: string): AddressClass {
  const g = ipv6Groups(ip);
  const v4 = embeddedIpv4(g);
  // An address that may stand for several (a local-use NAT64 one with zero bytes) takes the strictest class.
  if (v4.length > 0) return v4.map(classifyIpv4).sort((a, b) => STRICTNESS.indexOf(a) - STRICTNESS.indexOf(b))[0];
  if (g.every((x, i) => x === (i === 7 ? 1 : 0))) return 'loopback';
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.join(':') === ipv6Groups(METADATA_V6).join(':')) return 'metadata';
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local'; // fe80::/10
  if ((g[0] & 0xfe00) === 0xfc00) return 'private'; // fc00::/7, unique local
  if ((g[0] & 0xffc0) === 0xfec0) return 'private'; // fec0::/10, deprecated site-local
  return 'public';
}

/** Classifies an IP literal (IPv4, IPv6, with or without brackets or a zone); undefined when it is not one. */
export function classifyAddress(address: string): AddressClass | undefined {
  const ip = address.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(ip.split('%')[0]);
  if (family === 4) return classifyIpv4(ip);
  if (family === 6) return classifyIpv6(ip);
  return undefined;
}
