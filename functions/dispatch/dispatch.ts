import type { Incoming } from '../../events/incoming.js';
import type { GatewayKey } from '../../api/gateway-key.js';
import { DeploymentSchema, GatewayClassSchema, GatewaySchema, type Gateway, type GatewayClass } from '../../api/schemas.js';
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import type { RolloutCensus } from '../reconcile/plan/plan-types.js';
import { nextInLine, rolloutState, slotOf } from '../reconcile/plan/rollout-budget.js';
import { indexValueOf, ROLLING, rolloutIndexKey } from '../reconcile/plan/rollout-index.js';
import { hintOf } from '../reconcile/plan/gateway-reads.js';
import { classesDefaultingTo, gatewaysDefaultedBy } from './class-defaults.js';
import {
  deploymentOwner,
  gatewaysByDeploymentName,
  gatewaysInReach,
  gatewaysOfClass,
  gatewaysUsingConfiguration,
  routeGateways,
  uniqueKeys,
} from './gateway-keys.js';
import type { DispatchScope, Target } from './target.js';

// Which Gateways and GatewayClasses an API event affects: a pure function of
// the event and the lists read for it. What to read is decided here too
// (listsNeeded), so that the shell (event-targets.ts) reads exactly that,
// once, and the routing of every event type is unit-tested without an API
// server (test/unit/dispatch-routing.test.ts).

export type ApiServerIncoming = Extract<Incoming, { kind: 'apiserver' }>;

/** The lists an event's routing reads. Absent: not read (yet). */
export interface EventLists {
  /** Every GatewayClass. */
  classes?: GatewayClass[];
  /** The Gateways of the event's own namespace. */
  local?: Gateway[];
  /** The Gateways of every served namespace. */
  served?: Gateway[];
  /** Every LB Deployment and Gateway served, and the classes, for the rollout budget's line. */
  census?: RolloutCensus;
}

export type ListName = keyof EventLists;

/**
 * The lists still to read before `dispatch` can decide, given those read so
 * far; empty when it can. A GatewayConfiguration event reads in two steps: a
 * class default reaches Gateways in every namespace, so those are listed only
 * when some class names the configuration.
 */
export function listsNeeded(incoming: ApiServerIncoming, lists: EventLists, scope: DispatchScope): ListName[] {
  const missing = (...names: ListName[]): ListName[] => names.filter((n) => lists[n] === undefined);
  switch (incoming.resource.kind) {
    case 'Gateway':
      return leavingGateway(incoming, scope) ? missing('census') : [];
    case 'Deployment':
      // A deleted LB Deployment frees its slot, whatever it was doing.
      if (budgetOn(scope) && incoming.action === 'delete' && (!incoming.object || isLbDeployment(incoming.object))) return incoming.object ? missing('census') : missing('local', 'census');
      // Resource mode names the owner; reference mode only the Deployment's name.
      if (!incoming.object) return missing('local');
      return settledLbRollout(incoming.object, scope) ? missing('census') : [];
    case 'GatewayConfiguration': {
      const first = missing('local', 'classes');
      if (first.length > 0) return first;
      const defaulting = classesDefaultingTo(lists.classes ?? [], incoming.resource.namespace ?? '', incoming.resource.name);
      return defaulting.length > 0 ? missing('served') : [];
    }
    case 'GatewayClass':
    case 'L34Route':
      return missing('served');
  }
}

const budgetOn = (scope: DispatchScope): boolean => scope.rollout !== undefined && scope.rollout.budget > 0;

/**
 * A Gateway deleted, or being deleted, under a rollout budget: it leaves the
 * line and its Deployment's slot at once, and its event wakes the next in
 * line (a Gateway that leaves the class or turns invalid is woken for by its
 * own reconcile, once its status says so: reconcile.ts).
 */
function leavingGateway(incoming: ApiServerIncoming, scope: DispatchScope): boolean {
  if (!budgetOn(scope)) return false;
  if (incoming.action === 'delete') return true;
  const gateway = incoming.object ? GatewaySchema.safeParse(incoming.object) : undefined;
  return gateway?.success === true && gateway.data.metadata.deletionTimestamp !== undefined;
}

/**
 * An LB Deployment of ours whose rollout is over and whose rollout index
 * still says `rolling`, under a rollout budget: its event frees a slot. Its
 * owner's reconcile (the event's own target) takes the label back, so the
 * Deployment's later events, and those of settled Deployments that held no
 * slot, read no census: one census per rollout settled, not one per status
 * event.
 */
function settledLbRollout(object: unknown, scope: DispatchScope): boolean {
  if (!budgetOn(scope)) return false;
  const deployment = DeploymentSchema.safeParse(object);
  return (
    deployment.success &&
    isLbDeployment(deployment.data) &&
    indexValueOf(deployment.data, rolloutIndexKey(scope.controllerName)) === ROLLING &&
    slotOf(rolloutState(deployment.data)) === null
  );
}

function isLbDeployment(object: unknown): boolean {
  const deployment = DeploymentSchema.safeParse(object);
  return deployment.success && deployment.data.metadata.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_VALUE;
}

function keyFromRef(ref: string): GatewayKey {
  const slash = ref.indexOf('/');
  return { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
}

/** With the census read: the first Gateways in line, one per free slot (`gone`: a deleted Gateway, whose Deployment waits for the garbage collector). */
function nextOf(lists: EventLists, scope: DispatchScope, gone?: string): GatewayKey[] {
  if (!lists.census || !scope.rollout) return [];
  return nextInLine(scope.rollout.budget, lists.census, scope.rollout.templateHash, scope.controllerName, gone).map(keyFromRef);
}

/** What an API event affects. */
export interface Affected {
  targets: Target[];
  /** GatewayClasses whose status the event may change (reconciled in the same invocation). */
  classes: string[];
  /**
   * When the rule listed Gateways: those listed and the classes (undefined
   * when not listed), so that a fan-out can be cut to the Gateways that drifted
   * without listing them again (resync.ts driftedTargets).
   */
  listed?: { gateways: Gateway[]; classes: GatewayClass[] | undefined };
}

const gatewayKeyText = (gw: Gateway): string => `${gw.metadata.namespace ?? ''}/${gw.metadata.name}`;

function inScope(scope: DispatchScope, keys: GatewayKey[]): GatewayKey[] {
  const filtered = scope.namespaces.length === 0 ? keys : keys.filter((k) => scope.namespaces.includes(k.namespace));
  return uniqueKeys(filtered.filter((k) => k.namespace !== '' && k.name !== ''));
}

/**
 * Keys in scope, each with the hint its Gateway (as just listed) gives; the
 * classes, when listed too, add the class default.
 */
function targets(scope: DispatchScope, keys: GatewayKey[], gateways: Gateway[] = [], classes?: GatewayClass[]): Target[] {
  const byKey = new Map(gateways.map((gw) => [gatewayKeyText(gw), gw]));
  return inScope(scope, keys).map((key) => {
    const gw = byKey.get(`${key.namespace}/${key.name}`);
    return gw ? { key, hint: hintOf(gw, classes) } : { key };
  });
}

function unique(gateways: Gateway[]): Gateway[] {
  return [...new Map(gateways.map((gw) => [gatewayKeyText(gw), gw])).values()];
}

/**
 * The Gateways and classes an API event affects, from the event and the lists
 * listsNeeded asked for. The reconciles that follow read everything else fresh.
 */
export function dispatch(incoming: ApiServerIncoming, lists: EventLists, scope: DispatchScope): Affected {
  const { resource, object } = incoming;
  const ns = resource.namespace ?? '';
  switch (resource.kind) {
    case 'Gateway': {
      // Resource mode carries the Gateway itself.
      const gateway = object ? GatewaySchema.safeParse(object) : undefined;
      return { targets: targets(scope, [{ namespace: ns, name: resource.name }, ...nextOf(lists, scope, `${ns}/${resource.name}`)], gateway?.success ? [gateway.data] : []), classes: [] };
    }
    case 'Deployment': {
      // A rollout that settled, or a Deployment deleted, frees a slot: the
      // next in line goes now, not at the next resync.
      const next = nextOf(lists, scope);
      if (object) {
        const owner = deploymentOwner(object);
        return { targets: targets(scope, [...(owner ? [owner] : []), ...next]), classes: [] };
      }
      const local = lists.local ?? [];
      return { targets: targets(scope, [...gatewaysByDeploymentName(local, ns, resource.name), ...next], local), classes: [] };
    }
    case 'GatewayConfiguration': {
      const classes = lists.classes ?? [];
      const local = lists.local ?? [];
      const everywhere = lists.served ?? [];
      const defaulting = classesDefaultingTo(classes, ns, resource.name);
      const gateways = unique([...local, ...everywhere]);
      const keys = [...gatewaysUsingConfiguration(local, ns, resource.name), ...gatewaysDefaultedBy(everywhere, defaulting)];
      return { targets: targets(scope, keys, gateways, classes), classes: [...defaulting].sort(), listed: { gateways, classes } };
    }
    case 'GatewayClass': {
      const gateways = lists.served ?? [];
      const gatewayClass = object ? GatewayClassSchema.safeParse(object) : undefined;
      return {
        targets: targets(scope, gatewaysOfClass(gateways, resource.name), gateways, gatewayClass?.success ? [gatewayClass.data] : undefined),
        classes: [resource.name],
        listed: { gateways, classes: undefined },
      };
    }
    case 'L34Route': {
      // Every served namespace: a route may name, or have left, a Gateway
      // in another namespace that admits it.
      const gateways = lists.served ?? [];
      return { targets: targets(scope, object ? routeGateways(object, gateways) : gatewaysInReach(gateways, ns), gateways), classes: [] };
    }
  }
}
