import fc from 'fast-check';
import { cidrsOverlap, formatCidr, formatIp, parseCidr, parseIp } from '../../functions/reconcile/plan/cidr.js';
import { parseQuantity, quantitiesEqual } from '../../functions/reconcile/plan/quantity.js';

describe('cidr', () => {
  it('clears host bits like Go net.ParseCIDR', () => {
    expect(formatCidr(parseCidr('10.1.2.3/8')!)).toBe('10.0.0.0/8');
    expect(formatCidr(parseCidr('fd00:1:2::5/32')!)).toBe('fd00:1::/32');
  });

  it.each([
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['::ffff:1.2.3.4', '::ffff:102:304'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['1:0:3:4:5:6:7:8', '1:0:3:4:5:6:7:8'],
  ])('formats %s as %s (RFC 5952)', (input, expected) => {
    expect(formatIp(parseIp(input)!)).toBe(expected);
  });

  it('round-trips every IPv6 value', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), (groups) => {
        const text = groups.map((g) => g.toString(16)).join(':');
        const parsed = parseIp(text)!;
        expect(parseIp(formatIp(parsed))).toEqual(parsed);
      }),
    );
  });

  it('overlaps only within a family', () => {
    expect(cidrsOverlap(parseCidr('10.0.0.0/8')!, parseCidr('10.2.0.0/16')!)).toBe(true);
    expect(cidrsOverlap(parseCidr('10.0.0.0/16')!, parseCidr('10.1.0.0/16')!)).toBe(false);
    expect(cidrsOverlap(parseCidr('0.0.0.0/1')!, parseCidr('::/1')!)).toBe(false);
  });
});

describe('quantity', () => {
  it.each([
    ['1', '1000m'],
    ['0.5', '500m'],
    ['1Gi', '1073741824'],
    ['1k', '1000'],
    ['1e3', '1k'],
    ['1.5Gi', '1536Mi'],
    ['100m', 0.1],
    [2, '2000m'],
    ['1E', '1000P'],
  ])('%j equals %j', (a, b) => {
    expect(quantitiesEqual(a, b)).toBe(true);
  });

  it.each([
    ['1', '1001m'],
    ['1Gi', '1G'],
    ['128Mi', '128M'],
  ])('%j differs from %j', (a, b) => {
    expect(quantitiesEqual(a, b)).toBe(false);
  });

  it('falls back to text for what is not a quantity', () => {
    expect(parseQuantity('lots')).toBeNull();
    expect(quantitiesEqual('lots', 'lots')).toBe(true);
    expect(quantitiesEqual('1e999', '1e999')).toBe(true);
  });
});
