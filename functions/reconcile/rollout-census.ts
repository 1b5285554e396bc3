// The reads the rollout budget decides from (plan/rollout-budget.ts): every LB
// Deployment (by the managed-by label, which Meridio-2's controller and other
// installs of this one share) and every Gateway, in the watched namespaces,
// and the GatewayClasses, which say which Gateways, and so which
// Deployments, are this controller's (CONTROLLER_NAME): the budget counts
// those only, so two installs with different controller names never share
// one. Made only when the planner asks (a pod-template change with
// LB_ROLLOUT_BUDGET set), and by dispatch to wake the next in line: two
// lists per watched namespace and one of the classes, paged. What is kept
// of each object is what the budget reads, so a census of thousands stays
// small.
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import type { Deployment, Gateway, GatewayClass } from '../../api/schemas.js';
import type { KubeApi, Listed, ListedResource } from '../kube/kube-api.js';
import { forEachPage } from '../kube/list-pages.js';
import type { RolloutCensus } from './plan/plan-types.js';

const SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`;

function slimDeployment(d: Deployment): Deployment {
  const { name, namespace, generation, annotations, ownerReferences } = d.metadata;
  return {
    ...d,
    metadata: { name, ...(namespace !== undefined && { namespace }), ...(generation !== undefined && { generation }), ...(annotations && { annotations }), ...(ownerReferences && { ownerReferences }) },
    spec: { replicas: d.spec.replicas, template: { metadata: {}, spec: { containers: [] } } },
  } as Deployment;
}

function slimGateway(g: Gateway): Gateway {
  const { name, namespace, uid, deletionTimestamp } = g.metadata;
  return {
    apiVersion: g.apiVersion,
    kind: g.kind,
    metadata: { name, ...(namespace !== undefined && { namespace }), ...(uid !== undefined && { uid }), ...(deletionTimestamp !== undefined && { deletionTimestamp }) },
    spec: { gatewayClassName: g.spec.gatewayClassName, listeners: [] },
    status: { conditions: g.status?.conditions ?? [] },
  } as Gateway;
}

function slimClass(c: GatewayClass): GatewayClass {
  return { apiVersion: c.apiVersion, kind: c.kind, metadata: { name: c.metadata.name }, spec: { controllerName: c.spec.controllerName } } as GatewayClass;
}

async function listIn<R extends ListedResource, T>(api: KubeApi, resource: R, namespaces: readonly string[], slim: (item: Listed[R]) => T, labelSelector?: string): Promise<{ items: T[]; requests: number }> {
  const items: T[] = [];
  let requests = 0;
  for (const namespace of namespaces.length === 0 ? [undefined] : namespaces) {
    requests += await forEachPage(
      (limit, token) => api.listPage(resource, { limit, ...(namespace !== undefined && { namespace }), ...(labelSelector !== undefined && { labelSelector }), ...(token !== undefined && { continue: token }) }),
      (page) => {
        for (const item of page) items.push(slim(item));
      },
    );
  }
  return { items, requests };
}

export async function readRolloutCensus(api: KubeApi, namespaces: readonly string[]): Promise<RolloutCensus & { requests: number }> {
  const [deployments, gateways, classes] = await Promise.all([
    listIn(api, 'deployments', namespaces, slimDeployment, SELECTOR),
    listIn(api, 'gateways', namespaces, slimGateway),
    listIn(api, 'gatewayclasses', [], slimClass),
  ]);
  return { deployments: deployments.items, gateways: gateways.items, classes: classes.items, requests: deployments.requests + gateways.requests + classes.requests };
}
