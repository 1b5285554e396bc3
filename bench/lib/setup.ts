import { controllerIdentity } from '../../tools/harness/service-account-identity.js';
import { createNamespace, deleteNamespace, type BenchCluster } from './cluster.js';
import { warmUp, type BenchContext } from './context.js';
import { FunctionProcess } from '../../tools/harness/function-process.js';
import { createClass, createConfiguration, createGateways, deleteClass } from './objects.js';

// The controller identity, a GatewayClass of ours and a warmed-up API server:
// what every figure assumes. Shared by `npm run bench` and the quick test.

export async function setUp(cluster: BenchCluster, log: (msg: string) => void): Promise<BenchContext> {
  const home = await createNamespace(cluster, 'bench-controller');
  const identity = await controllerIdentity(cluster.admin, home, 4 * 3600);
  const className = `meridio-bench-${home.slice(-6)}`;
  await createClass(cluster, className);
  const ctx: BenchContext = { cluster, identity, className, log };
  const ns = await createNamespace(cluster, 'bench-warmup');
  await warmUp(
    ctx,
    (namespace) => FunctionProcess.start({ kubeconfig: identity.kubeconfig, namespaces: [namespace] }),
    async (namespace) => {
      await createConfiguration(cluster, namespace, 'cfg');
      await createGateways(cluster, namespace, ['warm-up'], className, 'cfg');
    },
    ns,
  );
  return ctx;
}

/** Removes what setUp and the figures created (needed on a shared cluster; the bench's own is thrown away). */
export async function tearDown(ctx: BenchContext, opts: { namespaces: boolean }): Promise<void> {
  await ctx.identity.dispose();
  if (!opts.namespaces) return;
  await deleteClass(ctx.cluster, ctx.className);
  for (const ns of ctx.cluster.namespaces) await deleteNamespace(ctx.cluster, ns);
}
