import type { Incoming } from '../../events/incoming.js';
import type { GatewayKey } from '../../api/gateway-key.js';
import type { KubeApi } from '../kube/kube-api.js';
import { hintOf } from '../reconcile/plan/gateway-reads.js';
import { type ObserveHint } from '../../events/observe-hint.js';
import { GatewayClassSchema, GatewaySchema, type Gateway, type GatewayClass } from '../../api/schemas.js';
import { classesDefaultingTo, gatewaysDefaultedBy } from './class-defaults.js';
import { driftedTargets, type PlanningDeps } from './resync.js';
import {
  deploymentOwner,
  gatewaysByDeploymentName,
  gatewaysInReach,
  gatewaysOfClass,
  gatewaysUsingConfiguration,
  routeGateways,
  uniqueKeys,
} from './gateway-keys.js';

export interface DispatchScope {
  controllerName: string;
  /** Namespaces served; empty means all. */
  namespaces: string[];
}

type ApiServerIncoming = Extract<Incoming, { kind: 'apiserver' }>;

/** Gateways of the namespace, or of every served namespace for a cluster-scoped cause. */
async function gatewaysIn(api: KubeApi, scope: DispatchScope, namespace?: string): Promise<Gateway[]> {
  if (namespace !== undefined) return api.listGateways(namespace);
  if (scope.namespaces.length === 0) return api.listGateways();
  return (await Promise.all(scope.namespaces.map((ns) => api.listGateways(ns)))).flat();
}

function inScope(scope: DispatchScope, keys: GatewayKey[]): GatewayKey[] {
  const filtered = scope.namespaces.length === 0 ? keys : keys.filter((k) => scope.namespaces.includes(k.namespace));
  return uniqueKeys(filtered.filter((k) => k.namespace !== '' && k.name !== ''));
}

/** A Gateway to reconcile, with what dispatch already knows of what it names (observe-hint.ts). */
export interface Target {
  key: GatewayKey;
  hint?: ObserveHint;
}

/**
 * Keys in scope, each with the hint its Gateway (as just listed) gives; the
 * classes, when listed too, add the class default.
 */
function targets(scope: DispatchScope, keys: GatewayKey[], gateways: Gateway[] = [], classes?: GatewayClass[]): Target[] {
  const byKey = new Map(gateways.map((gw) => [`${gw.metadata.namespace ?? ''}/${gw.metadata.name}`, gw]));
  return inScope(scope, keys).map((key) => {
    const gw = byKey.get(`${key.namespace}/${key.name}`);
    return gw ? { key, hint: hintOf(gw, classes) } : { key };
  });
}

/** The Gateways an event affects and, when dispatch listed them, their objects and the classes. */
interface Affected {
  targets: Target[];
  listed?: { gateways: Gateway[]; classes: GatewayClass[] | undefined };
}

/**
 * The Gateways an API event affects. Reads only the lists the rule needs;
 * the reconciles that follow read everything else fresh.
 */
async function affectedBy(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming): Promise<Affected> {
  const { resource, object } = incoming;
  const ns = resource.namespace ?? '';
  switch (resource.kind) {
    case 'Gateway': {
      // Resource mode carries the Gateway itself.
      const gateway = object ? GatewaySchema.safeParse(object) : undefined;
      return { targets: targets(scope, [{ namespace: ns, name: resource.name }], gateway?.success ? [gateway.data] : []) };
    }
    case 'Deployment': {
      if (object) {
        const owner = deploymentOwner(object);
        return { targets: targets(scope, owner ? [owner] : []) };
      }
      const gateways = await gatewaysIn(api, scope, ns);
      return { targets: targets(scope, gatewaysByDeploymentName(gateways, ns, resource.name), gateways) };
    }
    case 'GatewayConfiguration': {
      const [local, classes] = await Promise.all([gatewaysIn(api, scope, ns), api.listGatewayClasses()]);
      const own = gatewaysUsingConfiguration(local, ns, resource.name);
      // A class default reaches Gateways in every namespace: list them only when some class names it.
      const defaulting = classesDefaultingTo(classes, ns, resource.name);
      const everywhere = defaulting.length === 0 ? [] : await gatewaysIn(api, scope);
      const gateways = [...local, ...everywhere];
      return { targets: targets(scope, [...own, ...gatewaysDefaultedBy(everywhere, defaulting)], gateways, classes), listed: { gateways, classes } };
    }
    case 'GatewayClass': {
      const gateways = await gatewaysIn(api, scope);
      const gatewayClass = object ? GatewayClassSchema.safeParse(object) : undefined;
      return { targets: targets(scope, gatewaysOfClass(gateways, resource.name), gateways, gatewayClass?.success ? [gatewayClass.data] : undefined), listed: { gateways, classes: undefined } };
    }
    case 'L34Route': {
      // Every served namespace: a route may name, or have left, a Gateway
      // in another namespace that admits it.
      const gateways = await gatewaysIn(api, scope);
      return { targets: targets(scope, object ? routeGateways(object, gateways) : gatewaysInReach(gateways, ns), gateways) };
    }
  }
}

/**
 * The Gateways to reconcile for an API event. With `planning`, a fan-out of
 * a GatewayConfiguration or GatewayClass event (more than one Gateway) is cut
 * to the Gateways whose reconcile would write (resync.ts): a few lists instead
 * of five reads per Gateway, and no reconcile for a change that moves nothing
 * (an edit of metadata only, a class change that Gateways with their own
 * parametersRef ignore).
 */
export async function targetsForApiEvent(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming, planning?: PlanningDeps): Promise<Target[]> {
  const affected = await affectedBy(api, scope, incoming);
  if (planning === undefined || affected.listed === undefined || affected.targets.length < 2) return affected.targets;
  const wanted = new Set(affected.targets.map((t) => `${t.key.namespace}/${t.key.name}`));
  const gateways = uniqueGateways(affected.listed.gateways).filter((gw) => wanted.has(`${gw.metadata.namespace ?? ''}/${gw.metadata.name}`));
  return (await driftedTargets(api, scope, { gateways, classes: affected.listed.classes }, planning)).targets;
}

function uniqueGateways(gateways: Gateway[]): Gateway[] {
  return [...new Map(gateways.map((gw) => [`${gw.metadata.namespace ?? ''}/${gw.metadata.name}`, gw])).values()];
}
