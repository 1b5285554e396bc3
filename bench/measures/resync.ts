import { pingEvent } from '../../events/outgoing.js';
import { createNamespace } from '../lib/cluster.js';
import { names, requestCounts, type BenchContext, type RequestCounts, type VerbCounts } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, waitApplied, waitDeploymentsObserved } from '../lib/objects.js';
import { summarize, type Summary } from '../lib/stats.js';

// P6: one resync pass (a PingSource event) over n Gateways that are all in
// sync. Dispatch lists the classes and the Gateways once, then fans out one
// reconcile request per Gateway to K_SINK (here the function itself), and
// answers once every reconcile has answered: event posted → answer is the
// duration of the whole pass. Requests come from the audit log.

export interface P6Size {
  n: number;
  passes: number;
  /** Event posted → dispatch answered (every reconcile of the pass done). */
  ms: Summary;
  /** Requests of the last pass. */
  counts: RequestCounts;
  /** Requests made once per pass (dispatch: list gatewayclasses, list gateways). */
  dispatchRequests: number;
  /** (total − dispatch) / n, by verb. */
  perGateway: VerbCounts;
  perGatewayTotal: number;
  requestsPerGatewayAll: number;
  /** Every pass made zero writes (all Gateways were in sync). */
  noWrites: boolean;
  /** Reconcile invocations that the pass's log lines show, and their outcomes. */
  outcomes: Record<string, number>;
}

export interface P6Result {
  sizes: P6Size[];
  /** Requests per Gateway (by verb) and per pass are the same for every n. */
  flat: boolean;
}

const DISPATCH = new Set(['list gatewayclasses', 'list gateways']);

export async function measureResync(ctx: BenchContext, opts: { sizes: number[]; passes: number; variant?: Variant }): Promise<P6Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p6');
  await createConfiguration(c, ns, 'cfg');
  const fn = await FunctionProcess.start({ ...(opts.variant ? { variant: opts.variant } : {}), kubeconfig: identity.kubeconfig, namespaces: [ns] });
  const out: P6Size[] = [];
  let have = 0;
  try {
    for (const n of [...opts.sizes].sort((a, b) => a - b)) {
      ctx.log(`P6 n=${n}: creating ${n - have} Gateways`);
      await createGateways(c, ns, names('gw', have, n), ctx.className, 'cfg');
      have = Math.max(have, n);
      const all = names('gw', 0, n);
      // Converge: a first pass creates the new Deployments.
      const first = await fn.post(pingEvent());
      if (first.status >= 300) throw new Error(`resync answered ${first.status}`);
      await waitApplied(c, ns, all, 1, 300000);
      await waitDeploymentsObserved(c, ns, n, 300000);
      // Settle: passes until one writes nothing (status follows Deployment status).
      for (let i = 0; i < 5; i++) {
        const w = await c.audit.begin();
        const settle = pingEvent();
        await fn.post(settle);
        // Its reconciles' log lines come before its own on the same pipe: once
        // that is read, none of them can land in the measured pass's count.
        await fn.handled(settle.id);
        if (requestCounts(await w.end(), identity.username).writes === 0) break;
      }
      ctx.log(`P6 n=${n}: measuring ${opts.passes} passes`);
      const times: number[] = [];
      let counts: RequestCounts | undefined;
      let classConfigurationReads = 0;
      let noWrites = true;
      let outcomes: Record<string, number> = {};
      for (let p = 0; p < opts.passes; p++) {
        fn.clearLogs();
        const window = await c.audit.begin();
        const ev = pingEvent();
        const r = await fn.post(ev);
        const events = await window.end();
        if (r.status >= 300) throw new Error(`resync pass answered ${r.status}`);
        const line = await fn.handled(ev.id);
        if (line.gateways !== n) throw new Error(`resync fanned out to ${line.gateways} Gateways, expected ${n}`);
        times.push(r.ms);
        counts = requestCounts(events, identity.username);
        // The GatewayClass reconciles of the pass read the GatewayConfigurations
        // their classes name, which live outside the bench namespace: per pass,
        // and as many as the cluster has such classes.
        classConfigurationReads = events.filter((e) => e.user.username === identity.username && e.verb === 'get' && e.objectRef?.resource === 'gatewayconfigurations' && e.objectRef.namespace !== ns).length;
        if (counts.writes > 0) noWrites = false;
        outcomes = {};
        for (const l of fn.logs) {
          if (l.type === 'org.nordix.meridio2.gateway.reconcile') outcomes[l.outcome ?? '?'] = (outcomes[l.outcome ?? '?'] ?? 0) + 1;
        }
      }
      const last = counts as RequestCounts;
      let dispatchRequests = 0;
      const perGateway: VerbCounts = {};
      // The resync also reconciles every GatewayClass of ours: one CRD read and
      // one class read each, a per-pass cost like dispatch's lists, not a per-Gateway one.
      const classReconciles = last.byVerb['get customresourcedefinitions'] ?? 0;
      for (const [k, v] of Object.entries(last.byVerb)) {
        if (DISPATCH.has(k) || k === 'get customresourcedefinitions') dispatchRequests += v;
        else if (k === 'get gatewayclasses') {
          dispatchRequests += classReconciles;
          perGateway[k] = (v - classReconciles) / n;
        } else if (k === 'get gatewayconfigurations') {
          dispatchRequests += classConfigurationReads;
          perGateway[k] = (v - classConfigurationReads) / n;
        } else perGateway[k] = v / n;
      }
      const perGatewayTotal = (last.total - dispatchRequests) / n;
      out.push({ n, passes: opts.passes, ms: summarize(times), counts: last, dispatchRequests, perGateway, perGatewayTotal, requestsPerGatewayAll: last.total / n, noWrites, outcomes });
    }
  } finally {
    await fn.stop();
  }
  const shape = (s: P6Size): string => JSON.stringify({ perGateway: s.perGateway, dispatch: s.dispatchRequests });
  return { sizes: out, flat: out.every((s) => shape(s) === shape(out[0] as P6Size)) };
}
