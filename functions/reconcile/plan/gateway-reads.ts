// What a Gateway's reconcile must read besides the Gateway itself: its class,
// the GatewayConfiguration it renders from, and how far its listeners admit
// routes. Dispatch hands the same answer on as the observe hint of the
// reconcile requests it makes (events/observe-hint.ts), so that observe reads
// everything in one parallel round (docs/design.md §2).
import type { ObserveHint } from '../../../events/observe-hint.js';
import type { Gateway, GatewayClass } from '../../../api/schemas.js';
import { effectiveParametersRef, readableRef } from './parameters-ref.js';
import { routeScope, type RouteScope } from './route-attachment.js';

/**
 * The hint a Gateway object gives. The class default (when the Gateway names
 * no GatewayConfiguration of its own) is known only with the classes at hand.
 */
export function hintOf(gateway: Gateway, classes?: GatewayClass[]): ObserveHint {
  const gatewayClass = classes === undefined ? undefined : (classes.find((c) => c.metadata.name === gateway.spec.gatewayClassName) ?? null);
  const reads = readsOf(gateway, gatewayClass);
  const base = { gatewayClassName: gateway.spec.gatewayClassName, routeScope: routeScope(gateway) };
  return reads === null ? base : { ...base, configuration: reads.configuration };
}

/** What observe must read, given the Gateway and (once read) its class. */
export interface GatewayReads {
  className: string;
  configuration: { namespace: string; name: string } | null;
  scope: RouteScope;
}

/** Null when the class must be read before the configuration is known. */
export function readsOf(gateway: Gateway, gatewayClass: GatewayClass | null | undefined): GatewayReads | null {
  const own = gateway.spec.infrastructure?.parametersRef !== undefined;
  if (!own && gatewayClass === undefined) return null;
  // A class of another name is not this Gateway's class.
  const cls = gatewayClass?.metadata.name === gateway.spec.gatewayClassName ? gatewayClass : null;
  const ref = effectiveParametersRef(gateway, cls);
  return {
    className: gateway.spec.gatewayClassName,
    configuration: readableRef(ref) ? { namespace: ref.namespace, name: ref.name } : null,
    scope: routeScope(gateway),
  };
}
