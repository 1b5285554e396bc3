// Feedback on the L34Routes that name the reconciled key and do not attach to
// it. Meridio-2's L34Route has no status, so a Warning Event regarding the
// route is the only word its owner gets of why its VIPs never appear in a
// Gateway's status.addresses. The route itself is never written.
//
// Only the key's own reconcile speaks about a route (an L34Route event is
// dispatched to the Gateway its parentRef names), and only about the routes
// observe read: the key's namespace's, and every namespace's when a listener
// admits other namespaces (docs/operations.md says what that leaves out).
//
// The verdict is planned again on every reconcile, as there is no stored
// verdict to compare with; the shell writes an Event only when none of the
// same deterministic name exists yet (record-event.ts recordEventOnce), so a
// no-op reconcile writes nothing.
import { GATEWAY_GROUP, L34ROUTE_KIND, MERIDIO_GROUP } from '../../../api/names.js';
import type { Gateway, L34Route, Listener } from '../../../api/schemas.js';
import { WATCHED_RESOURCES } from '../../../api/watched-resources.js';
import type { Observed, PlannedEvent, RegardedEvent } from './plan-types.js';
import { admitsKind, admitsNamespace, attachedListeners, fromOf, gatewayKeyText, namespaceLabels, parentGatewayKey } from './route-attachment.js';

const ROUTE_API_VERSION = `${WATCHED_RESOURCES.L34Route.group}/${WATCHED_RESOURCES.L34Route.version}`;

/** The route's single parentRef names this key (an L34Route has exactly one parent). */
function namesKey(route: L34Route, keyText: string): boolean {
  const refs = route.spec.parentRefs;
  const [ref] = refs;
  return refs.length === 1 && ref !== undefined && parentGatewayKey(route, ref) === keyText;
}

function warning(reason: string, note: string): PlannedEvent {
  return { type: 'Warning', reason, action: 'Attach', note };
}

function regardingRoute(route: L34Route, event: PlannedEvent): RegardedEvent {
  return {
    regarding: { apiVersion: ROUTE_API_VERSION, kind: L34ROUTE_KIND, namespace: route.metadata.namespace ?? '', name: route.metadata.name, uid: route.metadata.uid },
    event,
  };
}

function kindsText(listener: Listener): string {
  return (listener.allowedRoutes?.kinds ?? []).map((k) => `${k.group ?? GATEWAY_GROUP}/${k.kind}`).join(', ');
}

/** Why one listener does not admit a route from `routeNamespace` (it does not when this is called). */
function refusal(listener: Listener, gateway: Gateway, routeNamespace: string, labels: ReadonlyMap<string, Record<string, string>>): string {
  const why: string[] = [];
  if (!admitsKind(listener)) why.push(`allowedRoutes.kinds lists ${kindsText(listener)}, not ${MERIDIO_GROUP}/${L34ROUTE_KIND}`);
  if (!admitsNamespace(listener, gateway, routeNamespace, labels)) {
    const from = fromOf(listener);
    if (from === 'Same') why.push(`allowedRoutes.namespaces.from is Same: only routes of namespace ${gateway.metadata.namespace ?? ''}`);
    else if (from === 'Selector') why.push(`allowedRoutes.namespaces.selector does not select namespace ${routeNamespace}`);
    else why.push(`allowedRoutes.namespaces.from is ${from}, which this controller does not know`);
  }
  return `listener ${listener.name}: ${why.join(' and ')}`;
}

/** Ours, and no listener admits the route: why, in the Gateway API's reasons. */
function notAdmitted(route: L34Route, gateway: Gateway, keyText: string, labels: ReadonlyMap<string, Record<string, string>>): PlannedEvent {
  const sectionName = route.spec.parentRefs[0]?.sectionName || undefined;
  const listeners = gateway.spec.listeners;
  const names = listeners.map((l) => l.name).join(', ');
  if (listeners.length === 0) return warning('NoMatchingParent', `Gateway ${keyText} has no listeners: the route's VIPs are not on it`);
  const asked = sectionName === undefined ? listeners : listeners.filter((l) => l.name === sectionName);
  if (sectionName !== undefined && asked.length === 0) {
    return warning('NoMatchingParent', `parentRef.sectionName ${sectionName} names no listener of Gateway ${keyText} (its listeners: ${names}): the route's VIPs are not on it`);
  }
  const routeNamespace = route.metadata.namespace ?? '';
  const reasons = asked.map((l) => refusal(l, gateway, routeNamespace, labels)).join('; ');
  return warning('NotAllowedByListeners', `Gateway ${keyText} does not admit this route from namespace ${routeNamespace} (${reasons}): the route's VIPs are not on it`);
}

/**
 * Warning Events for the observed routes that name the key and do not attach:
 * no Gateway (GatewayNotFound), a Gateway whose class is not this
 * controller's or does not exist (GatewayNotOurs), or one of ours whose
 * listeners do not admit the route (NoMatchingParent, NotAllowedByListeners,
 * the Gateway API's route reasons). Sorted by route, so the order is stable.
 */
export function planRouteFeedback(observed: Observed, controllerName: string): RegardedEvent[] {
  const keyText = gatewayKeyText(observed.key.namespace, observed.key.name);
  const text = (r: L34Route): string => gatewayKeyText(r.metadata.namespace, r.metadata.name);
  const routes = observed.routes.filter((r) => namesKey(r, keyText)).sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
  if (routes.length === 0) return [];
  const { gateway, gatewayClass } = observed;
  if (gateway === null) {
    const event = warning('GatewayNotFound', `parentRef names Gateway ${keyText}, which does not exist: the route's VIPs are on no Gateway`);
    return routes.map((r) => regardingRoute(r, event));
  }
  // Being deleted: the verdict is GatewayNotFound in a moment, said then.
  if (gateway.metadata.deletionTimestamp !== undefined) return [];
  const className = gateway.spec.gatewayClassName;
  const cls = gatewayClass?.metadata.name === className ? gatewayClass : null;
  if (cls === null) {
    const event = warning('GatewayNotOurs', `Gateway ${keyText} has GatewayClass ${className}, which does not exist: no controller attaches the route`);
    return routes.map((r) => regardingRoute(r, event));
  }
  if (cls.spec.controllerName !== controllerName) {
    const event = warning('GatewayNotOurs', `Gateway ${keyText} has GatewayClass ${className} of controller ${cls.spec.controllerName}, not of ${controllerName}: this controller does not attach the route`);
    return routes.map((r) => regardingRoute(r, event));
  }
  const labels = namespaceLabels(observed.namespaces);
  return routes.filter((r) => attachedListeners(r, gateway, labels).length === 0).map((r) => regardingRoute(r, notAdmitted(r, gateway, keyText, labels)));
}
