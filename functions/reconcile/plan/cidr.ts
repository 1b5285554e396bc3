// Small, exact IP and CIDR arithmetic on bigints. Node's net module checks the
// address syntax; everything else (masking, containment, canonical text) is
// done here because net.BlockList can only test single addresses.
import { isIP } from 'node:net';

export type IpFamily = 4 | 6;

export interface IpAddress {
  family: IpFamily;
  value: bigint;
}

export interface Cidr {
  family: IpFamily;
  // The address with host bits cleared: "10.1.2.3/8" describes 10.0.0.0/8,
  // as Go's net.ParseCIDR (and so the Meridio-2 controller) reads it.
  network: bigint;
  prefix: number;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

export function parseIp(text: string): IpAddress | null {
  // Zones ("fe80::1%eth0") name an interface, not an address.
  if (text.includes('%')) return null;
  const family = isIP(text);
  if (family === 4) return { family: 4, value: ipv4ToBigInt(text) };
  if (family === 6) return { family: 6, value: ipv6ToBigInt(text) };
  return null;
}

export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf('/');
  if (slash < 0 || slash !== text.lastIndexOf('/')) return null;
  const address = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  // Digits only, no sign, no leading zeros: "/08" is not a prefix length.
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText) || address === null) return null;
  const prefix = Number(prefixText);
  const bits = BITS[address.family];
  if (prefix > bits) return null;
  return { family: address.family, network: address.value & mask(address.family, prefix), prefix };
}

export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  return (
    outer.family === inner.family &&
    outer.prefix <= inner.prefix &&
    (inner.network & mask(outer.family, outer.prefix)) === outer.network
  );
}

// Subnets of different families never overlap; within a family, two prefixes
// overlap exactly when one contains the other.
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrContains(a, b) || cidrContains(b, a);
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIp({ family: cidr.family, value: cidr.network })}/${cidr.prefix}`;
}

export function formatIp(address: IpAddress): string {
  return address.family === 4 ? formatIpv4(address.value) : formatIpv6(address.value);
}

function mask(family: IpFamily, prefix: number): bigint {
  const bits = BigInt(BITS[family]);
  const all = (1n << bits) - 1n;
  return (all << (bits - BigInt(prefix))) & all;
}

function ipv4ToBigInt(text: string): bigint {
  return text.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6ToBigInt(text: string): bigint {
  let body = text;
  const tailGroups: number[] = [];
  // An embedded IPv4 tail ("::ffff:1.2.3.4") stands for the last two groups.
  if (body.includes('.')) {
    const cut = body.lastIndexOf(':');
    const v4 = Number(ipv4ToBigInt(body.slice(cut + 1)));
    tailGroups.push(Math.floor(v4 / 0x10000), v4 % 0x10000);
    body = body.slice(0, cut + 1);
    if (body.endsWith(':') && !body.endsWith('::')) body = body.slice(0, -1);
  }
  const groupsOf = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16));
  const [left = '', right] = body.split('::');
  const head = groupsOf(left);
  const tail = [...(right === undefined ? [] : groupsOf(right)), ...tailGroups];
  const zeros = new Array<number>(8 - head.length - tail.length).fill(0);
  const groups = right === undefined ? [...head, ...tail] : [...head, ...zeros, ...tail];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

// RFC 5952: lower-case hex, no leading zeros, the longest run (first on a tie)
// of two or more zero groups compressed to "::".
function formatIpv6(value: bigint): string {
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((value >> shift) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}
