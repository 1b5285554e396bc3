import { addressesEqual, gatewayAddresses } from '../../functions/reconcile/plan/addresses.js';
import { routeAttaches } from '../../functions/reconcile/plan/route-attachment.js';
import type { Gateway, L34Route } from '../../api/schemas.js';
import { GW, NS, gateway, route } from './reconcile-fixtures.js';

const NONE = new Map<string, Record<string, string>>();
const routeAttachesTo = (r: L34Route, g: Gateway): boolean => routeAttaches(r, g, NONE);

describe('routeAttaches: the parentRef', () => {
  const gw = gateway();

  it('defaults group, kind and namespace', () => {
    expect(routeAttachesTo(route('r', [], [{ name: GW }]), gw)).toBe(true);
    expect(
      routeAttachesTo(route('r', [], [{ name: GW, namespace: NS, group: 'gateway.networking.k8s.io', kind: 'Gateway' }]), gw),
    ).toBe(true);
  });

  it('rejects another Gateway, namespace, group or kind', () => {
    expect(routeAttachesTo(route('r', [], [{ name: 'other' }]), gw)).toBe(false);
    expect(routeAttachesTo(route('r', [], [{ name: GW, namespace: 'elsewhere' }]), gw)).toBe(false);
    expect(routeAttachesTo(route('r', [], [{ name: GW }], 'elsewhere'), gw)).toBe(false);
    expect(routeAttachesTo(route('r', [], [{ name: GW, group: 'example.com' }]), gw)).toBe(false);
    expect(routeAttachesTo(route('r', [], [{ name: GW, kind: 'Service' }]), gw)).toBe(false);
  });

  it('ignores routes with several parents', () => {
    expect(routeAttachesTo(route('r', [], [{ name: GW }, { name: 'other' }]), gw)).toBe(false);
  });
});

describe('gatewayAddresses', () => {
  it('strips /32 and /128, de-duplicates, canonicalises and sorts', () => {
    const routes = [
      route('a', ['20.0.0.2/32', '2001:DB8::0001/128', '20.0.0.10/32']),
      route('b', ['20.0.0.2/32', '2001:db8::1/128', '10.0.0.1/32']),
      route('c', ['99.0.0.1/32'], [{ name: 'other' }]),
      route('d', ['20.0.0.0/24', 'not-an-ip', '30.0.0.1']),
    ];
    expect(gatewayAddresses(gateway(), routes, NONE)).toEqual([
      { type: 'IPAddress', value: '10.0.0.1' },
      { type: 'IPAddress', value: '20.0.0.10' },
      { type: 'IPAddress', value: '20.0.0.2' },
      { type: 'IPAddress', value: '2001:db8::1' },
    ]);
  });

  it('is independent of route order', () => {
    const routes = [route('a', ['20.0.0.3/32', 'fd00::9/128']), route('b', ['20.0.0.1/32'])];
    expect(gatewayAddresses(gateway(), [...routes].reverse(), NONE)).toEqual(gatewayAddresses(gateway(), routes, NONE));
  });

  it('compares with a stored list whose type was defaulted away', () => {
    expect(addressesEqual([{ type: 'IPAddress', value: '1.1.1.1' }], [{ value: '1.1.1.1' }])).toBe(true);
    expect(addressesEqual([{ type: 'IPAddress', value: '1.1.1.1' }], [{ type: 'Hostname', value: '1.1.1.1' }])).toBe(false);
  });
});
