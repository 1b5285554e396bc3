// The reads of a list-based resync (docs/design.md §11): each kind of object
// the planner needs, in pages of at most 500, from the API server's watch
// cache. Everything but the LB Deployments is kept for the pass; the
// Deployments are handed over a page at a time, so that a pass holds one
// page of them, not all.
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import { classConfigurationRef } from '../gatewayclass/plan.js';
import type { KubeApi, Listed, ListedResource } from '../kube/kube-api.js';
import { forEachPage } from '../kube/list-pages.js';
import { routeScope } from '../reconcile/plan/route-attachment.js';
import type { Deployment, Gateway, GatewayClass, GatewayConfiguration, L34Route } from '../../api/schemas.js';
import { byKey, byName, configurationOf, indexRoutes, objectKey, type ListedInputs } from './resync-plan.js';

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
    count.requests += await forEachPage(
      (limit, token) =>
        api.listPage(resource, {
          limit,
          ...(namespace !== undefined && { namespace }),
          ...(labelSelector !== undefined && { labelSelector }),
          ...(token !== undefined && { continue: token }),
        }),
      onPage,
    );
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
 * What the plans of `gateways` (and of `classes`, for their own status) read
 * besides their Deployments: the classes, the GatewayConfigurations, the
 * routes, and the namespaces when a listener selects them by label. Lists in
 * `scope`; a class default in a namespace outside it is read by name.
 */
export async function readInputs(api: KubeApi, gateways: readonly Gateway[], classes: readonly GatewayClass[], scope: ListScope, count: RequestCount): Promise<ListedInputs> {
  const classesByName = byName(classes);
  const scopes = new Set(gateways.map(routeScope));
  const routesByParent = new Map<string, L34Route[]>();
  const [configurations, namespaces] = await Promise.all([
    listAll(api, 'gatewayconfigurations', scope, count),
    scopes.has('selector') ? listAll(api, 'namespaces', undefined, count) : null,
    // A listener that admits other namespaces' routes may get them from any namespace.
    eachPage(api, 'l34routes', scope !== undefined && (scopes.has('all') || scopes.has('selector')) ? undefined : scope, (page) => indexRoutes(routesByParent, page), count),
  ]);
  const configurationsByKey = byKey(configurations);
  const listed = (ref: { namespace: string }): boolean => scope === undefined || scope.includes(ref.namespace);
  const wanted = new Map<string, { namespace: string; name: string }>();
  for (const ref of [...gateways.map((gw) => configurationOf(gw, classesByName)), ...classes.map(classConfigurationRef)]) {
    if (ref !== null && !listed(ref)) wanted.set(objectKey(ref.namespace, ref.name), ref);
  }
  const outside = await Promise.all([...wanted.values()].map((ref) => api.getGatewayConfiguration(ref.namespace, ref.name)));
  count.requests += wanted.size;
  for (const configuration of outside) {
    if (configuration !== null) configurationsByKey.set(objectKey(configuration.metadata.namespace, configuration.metadata.name), configuration);
  }
  return { classes: classesByName, configurations: configurationsByKey satisfies Map<string, GatewayConfiguration>, routesByParent, namespaces };
}
