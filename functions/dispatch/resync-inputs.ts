// The reads of a list-based resync (docs/design.md §11): each kind of object
// the planner needs, in pages of at most 500, from the API server's watch
// cache. Everything but the LB Deployments is kept for the pass; the
// Deployments are handed over a page at a time, so that a pass holds one
// page of them, not all.
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import type { KubeApi, Listed, ListedResource } from '../kube/kube-api.js';
import { forEachPage } from '../kube/list-pages.js';
import { routeScope } from '../reconcile/plan/route-attachment.js';
import type { Deployment, Gateway, GatewayClass, L34Route } from '../../api/schemas.js';
import { byKey, byName, indexRoutes, type ListedInputs } from './resync-plan.js';

/** The namespaces to list in, one list each; undefined: one list over every namespace. */
export type ListScope = readonly string[] | undefined;

/** The API requests a pass made, for its log line and the tests. */
export interface RequestCount {
  requests: number;
}

/** Every LB Deployment carries this label (render-deployment.ts); the API server filters by it in its cache. */
export const LB_DEPLOYMENT_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`;

/** Hands each page of `resource` in `scope` to `onPage`, one namespace after the other. */
export async function eachPage<R extends ListedResource>(
  api: KubeApi,
  resource: R,
  scope: ListScope,
  onPage: (items: Listed[R][]) => void,
  count: RequestCount,
  labelSelector?: string,
): Promise<void> {
  for (const namespace of scope ?? [undefined]) {
    // Read after the await: lists run in parallel, and `+= await` would add to a stale count.
    const requests = await forEachPage(
      (limit, token) =>
        api.listPage(resource, {
          limit,
          ...(namespace !== undefined && { namespace }),
          ...(labelSelector !== undefined && { labelSelector }),
          ...(token !== undefined && { continue: token }),
        }),
      onPage,
    );
    count.requests += requests;
  }
}

/** Every object of `resource` in `scope`. */
export async function listAll<R extends ListedResource>(api: KubeApi, resource: R, scope: ListScope, count: RequestCount): Promise<Listed[R][]> {
  const items: Listed[R][] = [];
  await eachPage(api, resource, scope, (page) => {
    for (const item of page) items.push(item);
  }, count);
  return items;
}

/** The LB Deployments in `scope`, a page at a time. */
export function eachDeploymentPage(api: KubeApi, scope: ListScope, onPage: (items: Deployment[]) => void, count: RequestCount): Promise<void> {
  return eachPage(api, 'deployments', scope, onPage, count, LB_DEPLOYMENT_SELECTOR);
}

/**
 * What the plans of `gateways` (and of the classes, for their own status)
 * read besides the Deployments: the classes, the GatewayConfigurations, the
 * routes, and the namespaces when a listener selects them by label. Routes
 * are listed in `scope`, or everywhere when a listener admits other
 * namespaces' routes. GatewayConfigurations are listed in every namespace: a
 * class default may live outside the served namespaces, and one list costs
 * less than a read per default.
 */
export async function readInputs(api: KubeApi, gateways: readonly Gateway[], classes: readonly GatewayClass[], scope: ListScope, count: RequestCount): Promise<ListedInputs> {
  const scopes = new Set(gateways.map(routeScope));
  const routesByParent = new Map<string, L34Route[]>();
  const [configurations, namespaces] = await Promise.all([
    listAll(api, 'gatewayconfigurations', undefined, count),
    scopes.has('selector') ? listAll(api, 'namespaces', undefined, count) : null,
    eachPage(api, 'l34routes', scopes.has('all') || scopes.has('selector') ? undefined : scope, (page) => indexRoutes(routesByParent, page), count),
  ]);
  return { classes: byName(classes), configurations: byKey(configurations), routesByParent, namespaces };
}
