import type { GatewayKey, Incoming } from '../../events/incoming.js';
import type { KubeApi } from '../kube/kube-api.js';
import type { Gateway } from '../reconcile/plan/schemas.js';
import { classesDefaultingTo, gatewaysDefaultedBy } from './class-defaults.js';
import {
  deploymentOwner,
  gatewaysByDeploymentName,
  gatewaysInReach,
  gatewaysOfClass,
  gatewaysUsingConfiguration,
  managedGateways,
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

/**
 * The Gateways an API event affects. Reads only the lists the rule needs;
 * the reconciles that follow read everything else fresh.
 */
export async function keysForApiEvent(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming): Promise<GatewayKey[]> {
  const { resource, object } = incoming;
  const ns = resource.namespace ?? '';
  switch (resource.kind) {
    case 'Gateway':
      return inScope(scope, [{ namespace: ns, name: resource.name }]);
    case 'Deployment': {
      if (object) {
        const owner = deploymentOwner(object);
        return inScope(scope, owner ? [owner] : []);
      }
      return inScope(scope, gatewaysByDeploymentName(await gatewaysIn(api, scope, ns), ns, resource.name));
    }
    case 'GatewayConfiguration': {
      const own = gatewaysUsingConfiguration(await gatewaysIn(api, scope, ns), ns, resource.name);
      // A class default reaches Gateways in every namespace: list them only when some class names it.
      const classes = classesDefaultingTo(await api.listGatewayClasses(), ns, resource.name);
      const defaulted = classes.length === 0 ? [] : gatewaysDefaultedBy(await gatewaysIn(api, scope), classes);
      return inScope(scope, [...own, ...defaulted]);
    }
    case 'GatewayClass':
      return inScope(scope, gatewaysOfClass(await gatewaysIn(api, scope), resource.name));
    case 'L34Route': {
      // Every served namespace: a route may name, or have left, a Gateway
      // in another namespace that admits it.
      const gateways = await gatewaysIn(api, scope);
      return inScope(scope, object ? routeGateways(object, gateways) : gatewaysInReach(gateways, ns));
    }
  }
}

/** The resync: every Gateway whose class is ours. */
export async function keysForResync(api: KubeApi, scope: DispatchScope): Promise<GatewayKey[]> {
  const [classes, gateways] = await Promise.all([api.listGatewayClasses(), gatewaysIn(api, scope)]);
  return inScope(scope, managedGateways(gateways, classes, scope.controllerName));
}
