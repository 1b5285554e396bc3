// The reads the rollout budget decides from (plan/rollout-budget.ts): the LB
// Deployments that this controller's rollout index (plan/rollout-index.ts)
// labels `rolling` (every page: at most the budget's holders and the few
// whose settled rollout's label is not yet taken back), then the head of the
// line: the first Deployments in key order whose label puts them in line,
// one page of just enough (lineHeadLength) for every verdict and wake, and,
// when the planner asks, the head of one configuration's line the same way
// (the Deployments rendering an older generation of it). So a census is two
// small lists per watched namespace (three for a configuration's edit)
// whatever the number of Gateways, and the Deployments of another controller (another label key)
// are never read. Made only when the planner asks (a pod-template change
// with LB_ROLLOUT_BUDGET set), and by dispatch to wake the next in line.
// What is kept of each object is what the budget reads.
import type { Deployment } from '../../api/schemas.js';
import type { KubeApi } from '../kube/kube-api.js';
import { forEachPage } from '../kube/list-pages.js';
import type { ConfigurationLine, RolloutCensus } from './plan/plan-types.js';
import { lineHeadLength } from './plan/rollout-budget.js';
import { configurationLineSelector, holderSelector, lineSelector, rolloutIndexKey } from './plan/rollout-index.js';

function slimDeployment(d: Deployment): Deployment {
  const { name, namespace, generation, labels, annotations, ownerReferences, deletionTimestamp } = d.metadata;
  return {
    ...d,
    metadata: {
      name,
      ...(namespace !== undefined && { namespace }),
      ...(generation !== undefined && { generation }),
      ...(labels && { labels }),
      ...(annotations && { annotations }),
      ...(ownerReferences && { ownerReferences }),
      ...(deletionTimestamp !== undefined && { deletionTimestamp }),
    },
    spec: { replicas: d.spec.replicas, template: { metadata: {}, spec: { containers: [] } } },
  } as Deployment;
}

export interface CensusScope {
  /** The watched namespaces (empty: all). */
  namespaces: readonly string[];
  controllerName: string;
  templateHash: string;
  budget: number;
  /** Also the head of this configuration's line: the Deployments rendering an older generation of it (the planner asks, plan.ts). */
  configurationLine?: ConfigurationLine;
}

const scopes = (namespaces: readonly string[]): (string | undefined)[] => (namespaces.length === 0 ? [undefined] : [...namespaces]);

export async function readRolloutCensus(api: KubeApi, scope: CensusScope): Promise<RolloutCensus & { requests: number }> {
  const key = rolloutIndexKey(scope.controllerName);
  const deployments: Deployment[] = [];
  let requests = 0;
  const holders = await Promise.all(
    scopes(scope.namespaces).map(async (namespace) => {
      const items: Deployment[] = [];
      const n = await forEachPage(
        (limit, token) => api.listPage('deployments', { limit, labelSelector: holderSelector(key), ...(namespace !== undefined && { namespace }), ...(token !== undefined && { continue: token }) }),
        (page) => {
          for (const d of page) items.push(slimDeployment(d));
        },
      );
      return { items, n };
    }),
  );
  for (const h of holders) {
    deployments.push(...h.items);
    requests += h.n;
  }
  // One page of the line per namespace: its head, in key order.
  const limit = lineHeadLength(scope.budget, deployments.length);
  const selectors = [lineSelector(key, scope.templateHash), ...(scope.configurationLine ? [configurationLineSelector(scope.controllerName, scope.configurationLine)] : [])];
  const heads = await Promise.all(selectors.flatMap((labelSelector) => scopes(scope.namespaces).map((namespace) => api.listPage('deployments', { limit, labelSelector, ...(namespace !== undefined && { namespace }) }))));
  for (const page of heads) {
    requests++;
    for (const d of page.items) deployments.push(slimDeployment(d));
  }
  return { deployments, requests };
}
