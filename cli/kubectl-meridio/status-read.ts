import type { Deployment, Gateway, GatewayConfiguration } from '../../api/schemas.js';
import { eachPage, LB_DEPLOYMENT_SELECTOR, listAll, type ListScope, type RequestCount } from '../../functions/dispatch/resync-inputs.js';
import type { KubeApi } from '../../functions/kube/kube-api.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import { effectiveParametersRef, readableRef } from '../../functions/reconcile/plan/parameters-ref.js';
import { isQueued } from '../../functions/reconcile/plan/rollout-budget.js';
import type { StatusSnapshot } from './status-rows.js';

// Reads what the status rows are made of, read-only, in a number of requests
// bounded by the number of pages, not of Gateways: the Gateways, the LB
// Deployments (by the label every one carries) and the GatewayConfigurations
// of the scope in pages of 500, the classes once, and only what the lists
// leave out one by one: a class default configuration in a namespace the
// list did not cover. When a Gateway of a narrower scope is queued, the
// Gateways and LB Deployments of every namespace too: the rollout line spans
// them all. One Gateway by name is a handful of gets.

export class GatewayNotFound extends Error {
  override readonly name = 'GatewayNotFound';
}

const key = (namespace: string | undefined, name: string): string => `${namespace ?? ''}/${name}`;

async function referencedConfigurations(api: KubeApi, snapshot: Omit<StatusSnapshot, 'cluster'>, listed: (namespace: string) => boolean, count: RequestCount): Promise<GatewayConfiguration[]> {
  const have = new Set(snapshot.configurations.map((c) => key(c.metadata.namespace, c.metadata.name)));
  const classes = new Map(snapshot.classes.map((c) => [c.metadata.name, c]));
  const missing = new Map<string, { namespace: string; name: string }>();
  for (const gw of snapshot.gateways) {
    const ref = effectiveParametersRef(gw, classes.get(gw.spec.gatewayClassName) ?? null);
    if (readableRef(ref) && !listed(ref.namespace) && !have.has(key(ref.namespace, ref.name))) missing.set(key(ref.namespace, ref.name), { namespace: ref.namespace, name: ref.name });
  }
  const got = await Promise.all([...missing.values()].map((m) => {
    count.requests++;
    return api.getGatewayConfiguration(m.namespace, m.name);
  }));
  return got.filter((c): c is GatewayConfiguration => c !== null);
}

/** `scope`: the namespaces (undefined: all); `name`: one Gateway of the one namespace. */
export async function readStatusSnapshot(api: KubeApi, controllerName: string, scope: ListScope, count: RequestCount, name?: string): Promise<StatusSnapshot> {
  let gateways: Gateway[];
  let deployments: Deployment[] = [];
  let configurations: GatewayConfiguration[] = [];
  const classesRead = listAll(api, 'gatewayclasses', undefined, count);
  if (name !== undefined) {
    const namespace = scope?.[0] ?? 'default';
    count.requests += 2;
    const [gw, d] = await Promise.all([api.getGateway(namespace, name), api.getDeployment(namespace, deploymentName(name))]);
    if (gw === null) throw new GatewayNotFound(`Gateway ${namespace}/${name} not found`);
    gateways = [gw];
    deployments = d === null ? [] : [d];
  } else {
    const lb: Deployment[] = [];
    [gateways, configurations] = await Promise.all([
      listAll(api, 'gateways', scope, count),
      listAll(api, 'gatewayconfigurations', scope, count),
      eachPage(api, 'deployments', scope, (page) => lb.push(...page), count, { labelSelector: LB_DEPLOYMENT_SELECTOR }),
    ]);
    deployments = lb;
  }
  const classes = await classesRead;
  const partial = { controllerName, gateways, classes, configurations, deployments };
  // A configuration missing from a namespace the list covered does not exist: no get can find it.
  const listed = (namespace: string): boolean => name === undefined && (scope === undefined || scope.includes(namespace));
  configurations = [...configurations, ...(await referencedConfigurations(api, partial, listed, count))];
  // The line spans every namespace the controller serves: a narrower read cannot place a queued Gateway in it.
  const needsLine = (scope !== undefined || name !== undefined) && gateways.some(isQueued);
  if (!needsLine) return { ...partial, configurations };
  const lb: Deployment[] = [];
  const [everyGateway] = await Promise.all([
    listAll(api, 'gateways', undefined, count),
    eachPage(api, 'deployments', undefined, (page) => lb.push(...page), count, { labelSelector: LB_DEPLOYMENT_SELECTOR }),
  ]);
  return { ...partial, configurations, cluster: { gateways: everyGateway, deployments: lb } };
}
