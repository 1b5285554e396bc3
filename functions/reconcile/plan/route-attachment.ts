// Which L34Routes attach to a Gateway: the route's parentRef names it, and a
// listener admits the route's namespace and kind (Gateway API
// listeners[].allowedRoutes). Meridio-2 checks only the parentRef, so a route
// in any namespace could put its VIPs on any Gateway; here a Gateway's owner
// decides, with the Gateway API's default of Same.
import { selectorMatches } from './label-selector.js';
import type { Gateway, L34Route, Listener, Namespace, ParentRef } from '../../../api/schemas.js';

import { GATEWAY_GROUP, GATEWAY_KIND, L34ROUTE_KIND, MERIDIO_GROUP } from '../../../api/names.js';

/** How far a Gateway's listeners reach: what observe must read to decide. */
export type RouteScope = 'same' | 'all' | 'selector';

export function fromOf(listener: Listener): string {
  return listener.allowedRoutes?.namespaces?.from ?? 'Same';
}

export function routeScope(gateway: Gateway): RouteScope {
  const froms = new Set(gateway.spec.listeners.map(fromOf));
  if (froms.has('All')) return 'all';
  if (froms.has('Selector')) return 'selector';
  return 'same';
}

/** "namespace/name": how a Gateway, and a parentRef naming one, are keyed. */
export function gatewayKeyText(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** The Gateway a parentRef names (its namespace defaults to the route's), or null when it names another kind. */
export function parentGatewayKey(route: L34Route, ref: ParentRef): string | null {
  if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind ?? GATEWAY_KIND) !== GATEWAY_KIND) return null;
  return gatewayKeyText(ref.namespace || route.metadata.namespace, ref.name);
}

/** The parentRef names this Gateway (an L34Route has exactly one parent). */
export function parentRefNames(route: L34Route, gateway: Gateway): { sectionName: string | undefined } | null {
  const refs = route.spec.parentRefs;
  if (refs.length !== 1) return null;
  const [ref] = refs;
  if (ref === undefined) return null;
  const names = parentGatewayKey(route, ref) === gatewayKeyText(gateway.metadata.namespace, gateway.metadata.name);
  return names ? { sectionName: ref.sectionName || undefined } : null;
}

/** A listener's allowedRoutes.kinds entry naming L34Route (the group defaults to the Gateway API's). */
export function isL34RouteKind(k: { group?: string | undefined; kind: string }): boolean {
  return (k.group ?? GATEWAY_GROUP) === MERIDIO_GROUP && k.kind === L34ROUTE_KIND;
}

export function admitsKind(listener: Listener): boolean {
  const kinds = listener.allowedRoutes?.kinds;
  return kinds === undefined || kinds.length === 0 || kinds.some(isL34RouteKind);
}

export function admitsNamespace(listener: Listener, gateway: Gateway, routeNamespace: string, namespaces: ReadonlyMap<string, Record<string, string>>): boolean {
  switch (fromOf(listener)) {
    case 'Same':
      return routeNamespace === gateway.metadata.namespace;
    case 'All':
      return true;
    case 'Selector': {
      const selector = listener.allowedRoutes?.namespaces?.selector;
      const labels = namespaces.get(routeNamespace);
      // No selector selects nothing, as an unknown namespace matches nothing.
      return selector !== undefined && labels !== undefined && selectorMatches(selector, labels);
    }
    default:
      return false;
  }
}

/** The listeners a route attaches to: by sectionName, or every listener that admits it. */
export function attachedListeners(route: L34Route, gateway: Gateway, namespaces: ReadonlyMap<string, Record<string, string>>): Listener[] {
  const parent = parentRefNames(route, gateway);
  if (parent === null) return [];
  const routeNamespace = route.metadata.namespace ?? '';
  return gateway.spec.listeners.filter(
    (l) =>
      (parent.sectionName === undefined || l.name === parent.sectionName) &&
      admitsKind(l) &&
      admitsNamespace(l, gateway, routeNamespace, namespaces),
  );
}

export function routeAttaches(route: L34Route, gateway: Gateway, namespaces: ReadonlyMap<string, Record<string, string>>): boolean {
  return attachedListeners(route, gateway, namespaces).length > 0;
}

export function namespaceLabels(namespaces: Namespace[] | null): ReadonlyMap<string, Record<string, string>> {
  return new Map((namespaces ?? []).map((n) => [n.metadata.name, n.metadata.labels ?? {}]));
}
