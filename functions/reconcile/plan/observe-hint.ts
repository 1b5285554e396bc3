// What an event already says about the objects a Gateway's reconcile will
// read: its class, the GatewayConfiguration it renders from, and how far its
// listeners admit routes. With it, observe reads everything in one parallel
// round; without it, or when the Gateway read disagrees, observe reads what
// the Gateway names in further rounds. A hint only decides what to read
// first, never what is true (docs/design.md §2).
import { z } from 'zod';
import { effectiveParametersRef, readableRef } from './parameters-ref.js';
import { routeScope, type RouteScope } from './route-attachment.js';
import type { Gateway, GatewayClass } from './schemas.js';

const Name = z.string().min(1).max(253);

export const ObserveHintSchema = z.strictObject({
  gatewayClassName: Name,
  /** The GatewayConfiguration to read; null: none is readable; absent: not known. */
  configuration: z.strictObject({ namespace: z.string().min(1).max(63), name: Name }).nullable().optional(),
  routeScope: z.enum(['same', 'all', 'selector']).optional(),
});
export type ObserveHint = z.infer<typeof ObserveHintSchema>;

/**
 * The hint a Gateway object gives. The class default (when the Gateway names
 * no GatewayConfiguration of its own) is known only with the classes at hand.
 */
export function hintOf(gateway: Gateway, classes?: GatewayClass[]): ObserveHint {
  const gatewayClass = classes === undefined ? undefined : (classes.find((c) => c.metadata.name === gateway.spec.gatewayClassName) ?? null);
  const plan = readPlanOf(gateway, gatewayClass);
  const base = { gatewayClassName: gateway.spec.gatewayClassName, routeScope: routeScope(gateway) };
  return plan === null ? base : { ...base, configuration: plan.configuration };
}

/** What observe must read, given the Gateway and (once read) its class. */
export interface ReadPlan {
  className: string;
  configuration: { namespace: string; name: string } | null;
  scope: RouteScope;
}

/** Null when the class must be read before the configuration is known. */
export function readPlanOf(gateway: Gateway, gatewayClass: GatewayClass | null | undefined): ReadPlan | null {
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
