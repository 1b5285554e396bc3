// The reads of a list-based resync (docs/design.md §11): each kind of object
// the planner needs, in pages of at most PAGE_SIZE, from the API server's
// watch cache. Gateways and their LB Deployments are walked a page at a time
// (resync-merge.ts) and never held whole; what the plans look up besides
// them (classes, GatewayConfigurations, routes, namespaces) is listed once
// and kept for the pass.
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import type { KubeApi, Listed, ListedResource } from '../kube/kube-api.js';
import { PAGE_SIZE, pagesOf } from '../kube/list-pages.js';
import { routeScope } from '../reconcile/plan/route-attachment.js';
import type { Deployment, Gateway, GatewayClass, GatewayConfiguration, L34Route, Namespace, PodDisruptionBudget } from '../../api/schemas.js';
import { byKey, byName, indexRoutes, objectKey, type ListedInputs } from './resync-plan.js';

/** The namespaces to list in, one list each; undefined: one list over every namespace. */
export type ListScope = readonly string[] | undefined;

/** The API requests a pass made, for its log line and the tests. */
export interface RequestCount {
  requests: number;
}

/** Every LB Deployment carries this label (render-deployment.ts); the API server filters by it in its cache. */
export const LB_DEPLOYMENT_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`;

export interface PageOptions {
  labelSelector?: string;
  /** Objects per request (PAGE_SIZE; the tests use small pages). */
  pageSize?: number;
}

/** The pages of `resource` in `scope`, one namespace after the other, each requested when pulled. */
export async function* pagesIn<R extends ListedResource>(api: KubeApi, resource: R, scope: ListScope, count: RequestCount, opts: PageOptions = {}): AsyncGenerator<Listed[R][], void, undefined> {
  const { labelSelector, pageSize = PAGE_SIZE } = opts;
  for (const namespace of scope ?? [undefined]) {
    yield* pagesOf((limit, token) => {
      count.requests++;
      return api.listPage(resource, {
        limit,
        ...(namespace !== undefined && { namespace }),
        ...(labelSelector !== undefined && { labelSelector }),
        ...(token !== undefined && { continue: token }),
      });
    }, pageSize);
  }
}

/** Hands each page of `resource` in `scope` to `onPage`. */
export async function eachPage<R extends ListedResource>(api: KubeApi, resource: R, scope: ListScope, onPage: (items: Listed[R][]) => void, count: RequestCount, opts: PageOptions = {}): Promise<void> {
  for await (const page of pagesIn(api, resource, scope, count, opts)) onPage(page);
}

/** Every object of `resource` in `scope`. */
export async function listAll<R extends ListedResource>(api: KubeApi, resource: R, scope: ListScope, count: RequestCount, pageSize = PAGE_SIZE): Promise<Listed[R][]> {
  const items: Listed[R][] = [];
  await eachPage(api, resource, scope, (page) => {
    for (const item of page) items.push(item);
  }, count, { pageSize });
  return items;
}

/** The LB Deployments in `scope`, a page at a time. */
export function deploymentPages(api: KubeApi, scope: ListScope, count: RequestCount, pageSize = PAGE_SIZE): AsyncGenerator<Deployment[], void, undefined> {
  return pagesIn(api, 'deployments', scope, count, { labelSelector: LB_DEPLOYMENT_SELECTOR, pageSize });
}

/**
 * The managed PodDisruptionBudgets in `scope` (LB_PDB_MAX_UNAVAILABLE on), by
 * "namespace/name": one list per 500, held for the pass (a few hundred bytes
 * each: the label selector filters in the API server's cache, and managed
 * fields are dropped).
 */
export async function managedPdbs(api: KubeApi, scope: ListScope, count: RequestCount, pageSize = PAGE_SIZE): Promise<Map<string, PodDisruptionBudget>> {
  const pdbs = new Map<string, PodDisruptionBudget>();
  await eachPage(api, 'poddisruptionbudgets', scope, (page) => {
    for (const pdb of page) pdbs.set(objectKey(pdb.metadata.namespace, pdb.metadata.name), pdb);
  }, count, { labelSelector: LB_DEPLOYMENT_SELECTOR, pageSize });
  return pdbs;
}

/** The listed classes by name and GatewayConfigurations by "namespace/name", as plans look them up. */
export function indexed(classes: readonly GatewayClass[], configurations: readonly GatewayConfiguration[]): Pick<ListedInputs, 'classes' | 'configurations'> {
  return { classes: byName(classes), configurations: byKey(configurations) };
}

/** What the plans of a page of Gateways look up besides their Deployments. */
export interface PlanInputs {
  inputsFor(gateways: readonly Gateway[]): Promise<ListedInputs>;
}

/**
 * The classes and GatewayConfigurations as listed, and the routes and
 * namespaces listed the first time a page of Gateways needs them: routes in
 * `scope`, or everywhere once a listener admits other namespaces' routes
 * (listed again then, once); namespaces once a listener selects them by
 * label. A route attaches only to a Gateway its parentRef names, so the
 * index by parent is all a plan needs. GatewayConfigurations are listed in
 * every namespace by the caller: a class default may live outside the served
 * namespaces, and one list costs less than a read per default.
 */
export function planInputs(api: KubeApi, listed: Pick<ListedInputs, 'classes' | 'configurations'>, scope: ListScope, count: RequestCount, pageSize = PAGE_SIZE): PlanInputs {
  const { classes, configurations } = listed;
  let routes: { everywhere: boolean; byParent: Map<string, L34Route[]> } | undefined;
  let namespaces: Namespace[] | null = null;
  const listRoutes = async (everywhere: boolean): Promise<void> => {
    const byParent = new Map<string, L34Route[]>();
    await eachPage(api, 'l34routes', everywhere ? undefined : scope, (page) => indexRoutes(byParent, page), count, { pageSize });
    routes = { everywhere, byParent };
  };
  return {
    async inputsFor(gateways) {
      const scopes = new Set(gateways.map(routeScope));
      const everywhere = scope === undefined || scopes.has('all') || scopes.has('selector');
      await Promise.all([
        gateways.length > 0 && (routes === undefined || (everywhere && !routes.everywhere)) ? listRoutes(everywhere) : undefined,
        scopes.has('selector') && namespaces === null ? listAll(api, 'namespaces', undefined, count, pageSize).then((n) => { namespaces = n; }) : undefined,
      ]);
      return { classes, configurations, routesByParent: routes?.byParent ?? new Map<string, L34Route[]>(), namespaces };
    },
  };
}
