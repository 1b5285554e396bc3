import { CustomObjectsApi } from '@kubernetes/client-node';
import { DEPLOYMENTS, GATEWAY_CLASSES, GATEWAY_CONFIGURATIONS, GATEWAYS, L34ROUTES } from '../../functions/kube/kube-api.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { createNamespace } from '../lib/cluster.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../functions/kube/kube-api.js';
import { connectionPool } from '../../functions/kube/pooled-client.js';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { reconcileVia, settle, type BenchContext } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, editConfiguration, waitDeploymentsObserved } from '../lib/objects.js';
import { median, summarize, type Summary } from '../lib/stats.js';

// P2: a warm function process (already served events), one Gateway.
// - no-op: a reconcile request for a Gateway in sync; posted → answered.
// - configuration change: the GatewayConfiguration is edited (not timed), then
//   a reconcile request; posted → answered (Deployment update + status update).
// - bare GET: one GET of the same Gateway from this process with the same
//   library (client-node CustomObjectsApi) as the same ServiceAccount,
//   interleaved with the no-op samples so both see the same load; once with
//   one connection pool (the floor: a round trip on an open connection) and
//   once through KubeConfig.makeApiClient() as the function builds its client
//   (client-node 2.0.1 opens a new TLS connection for every request).

export interface P2Result {
  samples: number;
  noop: Summary;
  configurationChange: Summary;
  /** GET with one connection pool (the function's connectionPool): a round trip on an open connection, the floor. */
  bareGet: Summary;
  /** GET through KubeConfig.makeApiClient(CustomObjectsApi) as shipped: a new connection and TLS handshake per request (client-node 2.0.1). */
  bareGetMakeApiClient: Summary;
  /** The no-op's own five reads (Gateway, Deployment, L34Routes, class, configuration) in parallel from this process, pooled: the floor of one read round. */
  bareRound: Summary;
  /** median(no-op) / median(bare round). */
  ratioRound: number;
  /** The same no-op posted without the observe hint (two read rounds instead of one). */
  noopWithoutHint: Summary;
  /** median(no-op) / median(bare GET, pooled): the target's ratio. */
  ratio: number;
  /** median(no-op without hint) / median(bare GET, pooled). */
  ratioWithoutHint: number;
  /** median(no-op) / median(bare GET, makeApiClient). */
  ratioMakeApiClient: number;
  /** The function's own durationMs (from its log, whole ms) for the no-op, i.e. without the HTTP hop from the bench. */
  noopInFunction: Summary;
  configurationChangeInFunction: Summary;
  /** Outcomes seen: every no-op should be in-sync, every change applied. */
  outcomes: Record<string, number>;
}

export async function measureWarmLatency(ctx: BenchContext, opts: { samples: number; changeSamples: number; warmup: number; variant?: Variant }): Promise<P2Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p2');
  await createConfiguration(c, ns, 'cfg');
  await createGateways(c, ns, ['warm'], ctx.className, 'cfg');
  const key = { namespace: ns, name: 'warm' };
  const fn = await FunctionProcess.start({ ...(opts.variant ? { variant: opts.variant } : {}), kubeconfig: identity.kubeconfig, namespaces: [ns] });
  const bare = new CustomObjectsApi(connectionPool(identity.kc, { requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS, telemetry: NO_TELEMETRY }).configuration());
  const stock = identity.kc.makeApiClient(CustomObjectsApi);
  const outcomes: Record<string, number> = {};
  const count = (o: string): void => { outcomes[o] = (outcomes[o] ?? 0) + 1; };
  try {
    await reconcileVia(fn, key);
    await waitDeploymentsObserved(c, ns, 1);
    await settle(fn, key);
    const noop: number[] = [];
    const get: number[] = [];
    const getStock: number[] = [];
    const noopIds: string[] = [];
    const unhinted: number[] = [];
    const round: number[] = [];
    // What fan-out and the resync send: the Gateway's class and configuration (functions/reconcile/plan/observe-hint.ts).
    const hint = { gatewayClassName: ctx.className, configuration: { namespace: ns, name: 'cfg' }, routeScope: 'same' as const };
    for (let i = 0; i < opts.warmup + opts.samples; i++) {
      const ev = reconcileEvent(key, undefined, hint);
      const r = await fn.post(ev);
      const u = await fn.post(reconcileEvent(key));
      const t = performance.now();
      await bare.getNamespacedCustomObject({ ...GATEWAYS, namespace: ns, name: 'warm' });
      const g = performance.now() - t;
      const t3 = performance.now();
      await Promise.all([
        bare.getNamespacedCustomObject({ ...GATEWAYS, namespace: ns, name: 'warm' }),
        bare.getNamespacedCustomObject({ ...DEPLOYMENTS, namespace: ns, name: 'sllbr-warm' }),
        bare.listNamespacedCustomObject({ ...L34ROUTES, namespace: ns }),
        bare.getClusterCustomObject({ ...GATEWAY_CLASSES, name: ctx.className }),
        bare.getNamespacedCustomObject({ ...GATEWAY_CONFIGURATIONS, namespace: ns, name: 'cfg' }),
      ]);
      const g3 = performance.now() - t3;
      const t2 = performance.now();
      await stock.getNamespacedCustomObject({ ...GATEWAYS, namespace: ns, name: 'warm' });
      const g2 = performance.now() - t2;
      if (i < opts.warmup) continue;
      noop.push(r.ms);
      unhinted.push(u.ms);
      round.push(g3);
      get.push(g);
      getStock.push(g2);
      noopIds.push(ev.id);
    }
    const noopInFn: number[] = [];
    for (const id of noopIds) {
      const line = await fn.handled(id);
      count(`no-op:${line.outcome ?? '?'}`);
      if (typeof line.durationMs === 'number') noopInFn.push(line.durationMs);
    }
    ctx.log(`P2 configuration change: ${opts.changeSamples} samples`);
    const change: number[] = [];
    const changeInFn: number[] = [];
    for (let i = 0; i < opts.changeSamples; i++) {
      await editConfiguration(c, ns, 'cfg');
      const ev = reconcileEvent(key);
      const r = await fn.post(ev);
      change.push(r.ms);
      const line = await fn.handled(ev.id);
      count(`configuration change:${line.outcome ?? '?'}`);
      if (typeof line.durationMs === 'number') changeInFn.push(line.durationMs);
    }
    return {
      samples: opts.samples,
      noop: summarize(noop),
      configurationChange: summarize(change),
      bareGet: summarize(get),
      bareGetMakeApiClient: summarize(getStock),
      noopWithoutHint: summarize(unhinted),
      bareRound: summarize(round),
      ratioRound: median(noop) / median(round),
      ratio: median(noop) / median(get),
      ratioWithoutHint: median(unhinted) / median(get),
      ratioMakeApiClient: median(noop) / median(getStock),
      noopInFunction: summarize(noopInFn),
      configurationChangeInFunction: summarize(changeInFn),
      outcomes,
    };
  } finally {
    await fn.stop();
  }
}
