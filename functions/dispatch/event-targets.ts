import type { KubeApi } from '../kube/kube-api.js';
import type { Gateway } from '../../api/schemas.js';
import { dispatch, listsNeeded, type Affected, type ApiServerIncoming, type EventLists, type ListName } from './dispatch.js';
import { driftedTargets, type PlanningDeps } from './resync.js';
import type { DispatchScope } from './target.js';
import { readRolloutCensus } from '../reconcile/rollout-census.js';

// The shell around dispatch for one API event: read the lists dispatch asks
// for (each at most once), let it decide, then cut a fan-out to the Gateways
// whose reconcile would write.

/** Gateways of the namespace, or of every served namespace. */
async function gatewaysIn(api: KubeApi, scope: DispatchScope, namespace?: string): Promise<Gateway[]> {
  if (namespace !== undefined) return api.listGateways(namespace);
  if (scope.namespaces.length === 0) return api.listGateways();
  return (await Promise.all(scope.namespaces.map((ns) => api.listGateways(ns)))).flat();
}

async function readList(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming, name: ListName): Promise<EventLists> {
  switch (name) {
    case 'classes':
      return { classes: await api.listGatewayClasses() };
    case 'local':
      return { local: await gatewaysIn(api, scope, incoming.resource.namespace ?? '') };
    case 'served':
      return { served: await gatewaysIn(api, scope) };
    case 'census':
      return { census: await readRolloutCensus(api, { namespaces: scope.namespaces, controllerName: scope.controllerName, templateHash: scope.rollout?.templateHash ?? '', budget: scope.rollout?.budget ?? 0 }) };
  }
}

/** The lists dispatch asks for, read in parallel, until it asks for nothing more. */
export async function readEventLists(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming): Promise<EventLists> {
  let lists: EventLists = {};
  for (let needed = listsNeeded(incoming, lists, scope); needed.length > 0; needed = listsNeeded(incoming, lists, scope)) {
    const read = await Promise.all(needed.map((name) => readList(api, scope, incoming, name)));
    lists = Object.assign({}, lists, ...read) as EventLists;
  }
  return lists;
}

/**
 * What an API event affects. A fan-out of a GatewayConfiguration or
 * GatewayClass event (more than one Gateway) is cut to the Gateways whose
 * reconcile would write (resync.ts): a few lists instead of five reads per
 * Gateway, and no reconcile for a change that moves nothing (an edit of
 * metadata only, a class change that Gateways with their own parametersRef
 * ignore).
 */
export async function affectedByEvent(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming, planning: PlanningDeps): Promise<Affected> {
  const affected = dispatch(incoming, await readEventLists(api, scope, incoming), scope);
  if (affected.listed === undefined || affected.targets.length < 2) return affected;
  const wanted = new Set(affected.targets.map((t) => `${t.key.namespace}/${t.key.name}`));
  const gateways = affected.listed.gateways.filter((gw) => wanted.has(`${gw.metadata.namespace ?? ''}/${gw.metadata.name}`));
  return { ...affected, targets: (await driftedTargets(api, scope, { gateways, classes: affected.listed.classes }, planning)).targets };
}
