// The resync's one seam to the planners (docs/design.md §11). A resync pass
// lists the objects once and asks, for every Gateway, the very planner its
// reconcile runs: would this reconcile write the Deployment, the status or an
// Event? Only those Gateways are reconciled. Nothing here decides anything
// itself; it looks up, from the lists, what observe would have read for the
// Gateway, and hands it to plan(). When the planner's input changes, this file
// is the one to follow it.
import { planClass } from '../gatewayclass/plan.js';
import { classParametersRef, readableRef } from '../reconcile/plan/parameters-ref.js';
import { readsOf } from '../reconcile/plan/gateway-reads.js';
import { plan } from '../reconcile/plan/plan.js';
import type { Observed, Planned, PlanInput } from '../reconcile/plan/plan-types.js';
import { gatewayKeyText, parentGatewayKey, routeScope } from '../reconcile/plan/route-attachment.js';
import { pdbAction } from '../reconcile/plan/render-pdb.js';
import type { Deployment, Gateway, GatewayClass, GatewayConfiguration, L34Route, Namespace, PodDisruptionBudget } from '../../api/schemas.js';

/** What every plan of a pass shares besides the objects. */
export interface PlanningContext {
  input: PlanInput;
  /** RFC 3339; only lastTransitionTime depends on it, and a change of time alone is no change. */
  now: string;
}

/** The listed objects, indexed the way a plan looks them up. */
export interface ListedInputs {
  classes: ReadonlyMap<string, GatewayClass>;
  /** By "namespace/name". */
  configurations: ReadonlyMap<string, GatewayConfiguration>;
  /**
   * By the Gateway a parentRef names ("namespace/name"). A route attaches only
   * to a Gateway its parentRef names, so these are all the routes that can
   * attach to it, whatever its listeners admit; the planner decides which do.
   */
  routesByParent: ReadonlyMap<string, readonly L34Route[]>;
  /** Listed only when some Gateway's listener selects namespaces by label. */
  namespaces: Namespace[] | null;
}

export const objectKey = gatewayKeyText;

export function byName<T extends { metadata: { name: string } }>(objects: Iterable<T>): Map<string, T> {
  return new Map([...objects].map((o) => [o.metadata.name, o]));
}

export function byKey<T extends { metadata: { name: string; namespace?: string } }>(objects: Iterable<T>): Map<string, T> {
  return new Map([...objects].map((o) => [objectKey(o.metadata.namespace, o.metadata.name), o]));
}

/** Adds routes to the index under every Gateway one of their parentRefs names. */
export function indexRoutes(index: Map<string, L34Route[]>, routes: Iterable<L34Route>): void {
  for (const route of routes) {
    const parents = new Set(route.spec.parentRefs.map((ref) => parentGatewayKey(route, ref)));
    for (const parent of parents) {
      if (parent === null) continue;
      const list = index.get(parent);
      if (list === undefined) index.set(parent, [route]);
      else list.push(route);
    }
  }
}

/** The GatewayConfiguration the Gateway's plan reads, as observe finds it: its own reference, or its class's default. */
export function configurationOf(gateway: Gateway, classes: ReadonlyMap<string, GatewayClass>): { namespace: string; name: string } | null {
  return readsOf(gateway, classes.get(gateway.spec.gatewayClassName) ?? null)?.configuration ?? null;
}

/**
 * What observe would read for this Gateway, taken from the lists.
 * `deployment` is sllbr-<gateway> as listed (or read by name), null when absent.
 */
export function observedFromLists(gateway: Gateway, deployment: Deployment | null, inputs: ListedInputs): Observed {
  const key = { namespace: gateway.metadata.namespace ?? '', name: gateway.metadata.name };
  const configuration = configurationOf(gateway, inputs.classes);
  return {
    key,
    gateway,
    gatewayClass: inputs.classes.get(gateway.spec.gatewayClassName) ?? null,
    gatewayConfiguration: configuration === null ? null : (inputs.configurations.get(objectKey(configuration.namespace, configuration.name)) ?? null),
    deployment,
    routes: [...(inputs.routesByParent.get(objectKey(key.namespace, key.name)) ?? [])],
    // As observe: namespaces only for a Gateway that selects them by label.
    namespaces: routeScope(gateway) === 'selector' ? inputs.namespaces : null,
  };
}

/**
 * The plan would write something: the Deployment (create or update), the
 * status, or an Event. A plan that asks for the rollout census (a rollout the
 * budget must judge) counts as a write: the resync's lists are pages, not the
 * census, so its reconcile decides (resync.ts hands a Gateway already queued
 * over only while a slot is free).
 */
export function planWrites(p: Planned): boolean {
  return p.outcome === 'needs-write' || p.outcome === 'needs-reads' || p.deployment.action !== 'none' || p.statusChanged || p.events.length > 0;
}

/** What a reconcile of this Gateway, reading these objects, would plan. */
export function gatewayPlan(gateway: Gateway, deployment: Deployment | null, inputs: ListedInputs, context: PlanningContext): Planned {
  return plan(observedFromLists(gateway, deployment, inputs), context.input, context.now);
}

/** True when a reconcile of this Gateway, reading these objects, would write anything. */
export function gatewayDrifts(gateway: Gateway, deployment: Deployment | null, inputs: ListedInputs, context: PlanningContext): boolean {
  return planWrites(gatewayPlan(gateway, deployment, inputs, context));
}

/**
 * True when a reconcile of this Gateway would create or update its LB
 * Deployment's PodDisruptionBudget (the setting on, the class ours, the
 * Deployment controlled by the Gateway): the reconcile's own check
 * (render-pdb.ts) on the listed objects. A collision is no drift: the
 * reconcile would not write it.
 */
export function pdbDrifts(gateway: Gateway, deployment: Deployment | null, pdb: PodDisruptionBudget | null, inputs: ListedInputs, context: PlanningContext): boolean {
  const { settings } = context.input;
  if (settings.lbPodDisruptionBudget === undefined) return false;
  if (inputs.classes.get(gateway.spec.gatewayClassName)?.spec.controllerName !== settings.controllerName) return false;
  const { action } = pdbAction(gateway, deployment, pdb, settings.lbPodDisruptionBudget);
  return action === 'create' || action === 'update';
}

/** True when the GatewayClass reconcile would write this class's status (gatewayclass/plan.ts). */
export function classDrifts(
  gatewayClass: GatewayClass,
  configurations: ReadonlyMap<string, GatewayConfiguration>,
  bundleVersion: string | undefined,
  context: { controllerName: string; template: Deployment; now: string },
): boolean {
  const ref = classParametersRef(gatewayClass);
  return planClass({
    name: gatewayClass.metadata.name,
    gatewayClass,
    configuration: readableRef(ref) ? (configurations.get(objectKey(ref.namespace, ref.name)) ?? null) : null,
    bundleVersion,
    controllerName: context.controllerName,
    template: context.template,
    now: context.now,
  }).statusChanged;
}
