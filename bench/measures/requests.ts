import { createNamespace } from '../lib/cluster.js';
import { reconcileVia, requestCounts, settle, type BenchContext, type RequestCounts } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createForeignDeployment, createGateways, editConfiguration, waitDeploymentsObserved } from '../lib/objects.js';
import { mutateDeployments } from '../../tools/mutating-policies.js';

// P3: API requests per reconcile, by verb, from the API server's audit log.
// Each scenario is one reconcile request posted to the function process; an
// audit window (barrier requests before and after) brackets it, and only the
// controller ServiceAccount's requests are counted.

export const P3_SCENARIOS = [
  'create',
  'no-op',
  'configuration change',
  'collision (first)',
  'collision (repeat)',
  'validation failure (first)',
  'validation failure (repeat)',
  'no-op under mutating admission',
] as const;
export type P3Scenario = (typeof P3_SCENARIOS)[number];

export interface P3Row {
  scenario: P3Scenario;
  /** Outcome the function logged (in-sync, applied, collision, invalid). */
  outcome: string;
  counts: RequestCounts;
  /** The counts were identical in every repeat. */
  consistent: boolean;
  repeats: number;
}

export interface P3Result {
  rows: P3Row[];
}

export async function measureRequests(ctx: BenchContext, opts: { repeats: number; variant?: Variant }): Promise<P3Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p3');
  await createConfiguration(c, ns, 'cfg');
  await createGateways(c, ns, ['gw'], ctx.className, 'cfg');
  // A second namespace where MutatingAdmissionPolicies rewrite the LB images
  // and add a Pod annotation, as image-mirror and injector policies do.
  const mutated = await createNamespace(c, 'bench-p3-mutated');
  const policies = await mutateDeployments(c.admin, mutated);
  await createConfiguration(c, mutated, 'cfg');
  await createGateways(c, mutated, ['gw'], ctx.className, 'cfg');
  const fn = await FunctionProcess.start({ ...(opts.variant ? { variant: opts.variant } : {}), kubeconfig: identity.kubeconfig, namespaces: [ns, mutated] });
  const samples = new Map<P3Scenario, { outcome: string; counts: RequestCounts }[]>();
  const windowed = async (scenario: P3Scenario, name: string, namespace = ns): Promise<void> => {
    const window = await c.audit.begin();
    const r = await reconcileVia(fn, { namespace, name });
    const events = await window.end();
    const list = samples.get(scenario) ?? [];
    list.push({ outcome: r.outcome, counts: requestCounts(events, identity.username) });
    samples.set(scenario, list);
  };
  try {
    // gw: applied once, then settled (with kube-controller-manager, after the
    // deployment controller reported the Deployment's status).
    await reconcileVia(fn, { namespace: ns, name: 'gw' });
    await reconcileVia(fn, { namespace: mutated, name: 'gw' });
    for (let r = 0; r < opts.repeats; r++) {
      ctx.log(`P3 repeat ${r + 1}/${opts.repeats}`);
      await createGateways(c, ns, [`new-${r}`], ctx.className, 'cfg');
      await windowed('create', `new-${r}`);

      await waitDeploymentsObserved(c, ns, 1);
      await settle(fn, { namespace: ns, name: 'gw' });
      await windowed('no-op', 'gw');

      await editConfiguration(c, ns, 'cfg');
      await windowed('configuration change', 'gw');

      await createForeignDeployment(c, ns, `sllbr-coll-${r}`);
      await createGateways(c, ns, [`coll-${r}`], ctx.className, 'cfg');
      await windowed('collision (first)', `coll-${r}`);
      await windowed('collision (repeat)', `coll-${r}`);

      await createGateways(c, ns, [`bad-${r}`], ctx.className, 'missing');
      await windowed('validation failure (first)', `bad-${r}`);
      await windowed('validation failure (repeat)', `bad-${r}`);

      await waitDeploymentsObserved(c, mutated, 1);
      await settle(fn, { namespace: mutated, name: 'gw' });
      await windowed('no-op under mutating admission', 'gw', mutated);
    }
  } finally {
    await fn.stop();
    await policies.remove();
  }
  const rows: P3Row[] = P3_SCENARIOS.map((scenario) => {
    const list = samples.get(scenario) ?? [];
    const first = list[0] ?? { outcome: '?', counts: { byVerb: {}, reads: 0, writes: 0, total: 0, conflicts: 0 } };
    const key = JSON.stringify(first.counts.byVerb);
    return {
      scenario,
      outcome: [...new Set(list.map((s) => s.outcome))].join('/'),
      counts: first.counts,
      consistent: list.every((s) => JSON.stringify(s.counts.byVerb) === key),
      repeats: list.length,
    };
  });
  return { rows };
}
