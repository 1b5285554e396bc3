import { CustomObjectsApi } from '@kubernetes/client-node';
import { L34ROUTES } from '../../functions/kube/kube-api.js';
import { PAGE_SIZE } from '../../functions/kube/list-pages.js';
import { routeBody } from '../../tools/gateway-manifest.js';
import { createNamespace, type BenchCluster } from '../lib/cluster.js';
import { names, reconcileVia, requestCounts, settle, type BenchContext } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways } from '../lib/objects.js';
import { summarize, type Summary } from '../lib/stats.js';

// P7: the route read of one reconcile. A Gateway's reconcile lists the
// L34Routes of its namespace (of every namespace for a listener that admits
// others) and the planner keeps those that name it: the API server cannot
// filter by parentRef (a CRD field selector cannot address a list such as
// spec.parentRefs). One Gateway, r routes in its namespace of which one names
// it; a warm no-op reconcile posted to the function (posted → answered), and
// the requests and bytes of its route list.

export interface P7Row {
  routes: number;
  noop: Summary;
  /** `list l34routes` requests of one reconcile (audit log): one per 500 routes. */
  listRequests: number;
  /** JSON bytes of the namespace's routes as the controller reads them. */
  listBytes: number;
}

export interface P7Result {
  rows: P7Row[];
}

async function createRoutes(c: BenchCluster, namespace: string, routeNames: string[], parent: (name: string) => string, concurrency = 8): Promise<void> {
  const api = c.admin.makeApiClient(CustomObjectsApi);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < routeNames.length) {
      const name = routeNames[next++] as string;
      const i = next;
      await api.createNamespacedCustomObject({ ...L34ROUTES, namespace, body: routeBody(name, parent(name), [`20.${Math.floor(i / 65536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}/32`]) });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, routeNames.length) }, worker));
}

async function routeBytes(ctx: BenchContext, namespace: string): Promise<number> {
  const api = ctx.identity.kc.makeApiClient(CustomObjectsApi);
  let bytes = 0;
  let token: string | undefined;
  do {
    const page = (await api.listNamespacedCustomObject({ ...L34ROUTES, namespace, limit: PAGE_SIZE, ...(token ? { _continue: token } : {}) })) as { items: unknown[]; metadata?: { continue?: string } };
    bytes += Buffer.byteLength(JSON.stringify(page.items));
    token = page.metadata?.continue || undefined;
  } while (token);
  return bytes;
}

export async function measureRouteRead(ctx: BenchContext, opts: { routeCounts: number[]; samples: number; variant?: Variant }): Promise<P7Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p7');
  await createConfiguration(c, ns, 'cfg');
  await createGateways(c, ns, ['gw'], ctx.className, 'cfg');
  const key = { namespace: ns, name: 'gw' };
  const fn = await FunctionProcess.start({ ...(opts.variant ? { variant: opts.variant } : {}), kubeconfig: identity.kubeconfig, namespaces: [ns] });
  const rows: P7Row[] = [];
  let have = 0;
  try {
    for (const r of [...opts.routeCounts].sort((a, b) => a - b)) {
      ctx.log(`P7 r=${r}: creating ${r - have} routes`);
      // The first route names the Gateway, the rest name Gateways that do not exist.
      await createRoutes(c, ns, names('route', have, r), (name) => (name === 'route-0000' ? 'gw' : `elsewhere-${name}`));
      have = Math.max(have, r);
      await settle(fn, key);
      const times: number[] = [];
      for (let i = 0; i < opts.samples; i++) times.push((await reconcileVia(fn, key)).ms);
      const window = await c.audit.begin();
      await reconcileVia(fn, key);
      const counts = requestCounts(await window.end(), identity.username);
      rows.push({ routes: r, noop: summarize(times), listRequests: counts.byVerb['list l34routes'] ?? 0, listBytes: await routeBytes(ctx, ns) });
    }
  } finally {
    await fn.stop();
  }
  return { rows };
}
