// The reads the rollout budget decides from (plan/rollout-budget.ts): every LB
// Deployment of this controller (by its managed-by label) and every Gateway,
// in the watched namespaces. Made only when the planner asks (a pod-template
// change with LB_ROLLOUT_BUDGET set): two lists per watched namespace, paged.
// What is kept of each object is what the budget reads, so a census of
// thousands stays small.
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import type { Deployment, Gateway } from '../../api/schemas.js';
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
  const { name, namespace } = g.metadata;
  return { ...g, metadata: { name, ...(namespace !== undefined && { namespace }) }, status: { conditions: g.status?.conditions ?? [] } } as Gateway;
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
  const [deployments, gateways] = await Promise.all([
    listIn(api, 'deployments', namespaces, slimDeployment, SELECTOR),
    listIn(api, 'gateways', namespaces, slimGateway),
  ]);
  return { deployments: deployments.items, gateways: gateways.items, requests: deployments.requests + gateways.requests };
}
