import type { WatchedObject } from '../../events/incoming.js';
import type { GatewayKey } from '../../api/gateway-key.js';
import { formatIp, parseIp } from '../reconcile/plan/cidr.js';
import { deploymentName } from '../reconcile/plan/names.js';
import { routeScope } from '../reconcile/plan/route-attachment.js';
import type { Gateway } from '../../api/schemas.js';

// Pure mapping rules: which Gateways an observed object affects. The I/O
// wrapper (dispatch.ts) fetches the lists these functions filter.

import { GATEWAY_CONFIGURATION_KIND, GATEWAY_GROUP, GATEWAY_KIND, MERIDIO_GROUP } from '../../api/names.js';

export function keyOf(gw: Gateway): GatewayKey {
  return { namespace: gw.metadata.namespace ?? '', name: gw.metadata.name };
}

/** Sorted, de-duplicated keys: fan-out order is stable and each Gateway is reconciled once. */
export function uniqueKeys(keys: GatewayKey[]): GatewayKey[] {
  const seen = new Map<string, GatewayKey>();
  for (const k of keys) seen.set(`${k.namespace}/${k.name}`, k);
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
}

/** A managed Deployment → its controller owner Gateway; none for a Deployment without one. */
export function deploymentOwner(object: WatchedObject): GatewayKey | undefined {
  const owner = object.metadata.ownerReferences?.find((o) => o.controller === true);
  if (!owner || owner.kind !== GATEWAY_KIND || !owner.apiVersion.startsWith(`${GATEWAY_GROUP}/`)) return undefined;
  return { namespace: object.metadata.namespace ?? '', name: owner.name };
}

/**
 * Reference mode carries no owner: the Gateway whose LB Deployment has this
 * name (names may be hashed, so they are compared, not parsed). Its reconcile
 * finds out whether the Deployment is really its own.
 */
export function gatewaysByDeploymentName(gateways: Gateway[], namespace: string, name: string): GatewayKey[] {
  return gateways
    .filter((gw) => (gw.metadata.namespace ?? '') === namespace && deploymentName(gw.metadata.name) === name)
    .map(keyOf);
}

export function gatewaysUsingConfiguration(gateways: Gateway[], namespace: string, name: string): GatewayKey[] {
  return gateways
    .filter((gw) => (gw.metadata.namespace ?? '') === namespace)
    .filter((gw) => {
      const ref = gw.spec.infrastructure?.parametersRef;
      return ref !== undefined && ref.name === name && ref.kind === GATEWAY_CONFIGURATION_KIND && ref.group === MERIDIO_GROUP;
    })
    .map(keyOf);
}

/** Every Gateway of the class, whoever controls the class now (a class that just stopped being ours included). */
export function gatewaysOfClass(gateways: Gateway[], className: string): GatewayKey[] {
  return gateways.filter((gw) => gw.spec.gatewayClassName === className).map(keyOf);
}

interface RouteLike {
  metadata: { namespace?: string };
  spec?: Record<string, unknown>;
}

/** Canonical text of an address, so 2001:DB8:0::1 and 2001:db8::1 compare equal. */
function canonicalIp(text: string): string {
  const ip = parseIp(text);
  return ip ? formatIp(ip) : text.toLowerCase();
}

function vipOf(cidr: string): string {
  const slash = cidr.indexOf('/');
  return canonicalIp(slash < 0 ? cidr : cidr.slice(0, slash));
}

/**
 * An L34Route → the Gateway its parentRef names (in any namespace), plus every
 * Gateway that currently advertises one of the route's VIPs. Update events
 * carry only the new object, so the second set is how a route moved away from
 * a Gateway (or deleted) still gets the old parent's addresses corrected.
 */
export function routeGateways(route: RouteLike, gateways: Gateway[]): GatewayKey[] {
  const namespace = route.metadata.namespace ?? '';
  const spec = route.spec ?? {};
  const parents = Array.isArray(spec.parentRefs) ? (spec.parentRefs as unknown[]) : [];
  const keys: GatewayKey[] = [];
  for (const p of parents) {
    if (!p || typeof p !== 'object') continue;
    const ref = p as { name?: unknown; namespace?: unknown; kind?: unknown; group?: unknown };
    if (typeof ref.name !== 'string' || ref.name === '') continue;
    if (ref.kind !== undefined && ref.kind !== GATEWAY_KIND) continue;
    if (ref.group !== undefined && ref.group !== GATEWAY_GROUP) continue;
    keys.push({ namespace: typeof ref.namespace === 'string' && ref.namespace ? ref.namespace : namespace, name: ref.name });
  }
  const cidrs = Array.isArray(spec.destinationCIDRs) ? (spec.destinationCIDRs as unknown[]).filter((c): c is string => typeof c === 'string') : [];
  const vips = new Set(cidrs.map(vipOf));
  for (const gw of gateways) {
    if ((gw.status?.addresses ?? []).some((a) => vips.has(canonicalIp(a.value)))) keys.push(keyOf(gw));
  }
  return uniqueKeys(keys);
}

/**
 * Reference mode for a route: its content is unknown, so every Gateway it
 * could attach to: those of its namespace, and those whose listeners admit
 * routes from other namespaces.
 */
export function gatewaysInReach(gateways: Gateway[], namespace: string): GatewayKey[] {
  return gateways.filter((gw) => (gw.metadata.namespace ?? '') === namespace || routeScope(gw) !== 'same').map(keyOf);
}
