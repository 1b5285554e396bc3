// Gateway status.addresses: the VIPs of the L34Routes attached to the Gateway.
import { formatIp, parseCidr } from './cidr.js';
import { routeAttaches } from './route-attachment.js';
import type { StatusAddress } from './plan-types.js';
import type { Gateway, L34Route } from '../../../api/schemas.js';

export const ADDRESS_TYPE_IP = 'IPAddress';

// A VIP is a host prefix (/32 or /128); anything else is not an address and
// is skipped. Values are written in canonical form so that "2001:DB8::0001/128"
// and "2001:db8::1/128" are one address, then sorted as strings (the order
// Meridio-2 uses) for a stable status.
export function gatewayAddresses(gateway: Gateway, routes: L34Route[], namespaces: ReadonlyMap<string, Record<string, string>>): StatusAddress[] {
  const values = new Set<string>();
  for (const route of routes) {
    // An L34Route has exactly one parent; a route listing several is invalid
    // and contributes nothing, rather than its VIPs appearing on several Gateways.
    if (!routeAttaches(route, gateway, namespaces)) continue;
    for (const text of route.spec.destinationCIDRs) {
      const cidr = parseCidr(text);
      if (cidr === null || cidr.prefix !== (cidr.family === 4 ? 32 : 128)) continue;
      values.add(formatIp({ family: cidr.family, value: cidr.network }));
    }
  }
  return [...values]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((value) => ({ type: ADDRESS_TYPE_IP, value }));
}

export function addressesEqual(a: StatusAddress[], b: Array<{ type?: string | undefined; value: string }>): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => x.value === b[i]?.value && x.type === (b[i]?.type ?? ADDRESS_TYPE_IP))
  );
}
