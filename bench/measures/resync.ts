import { AppsV1Api, ApiException } from '@kubernetes/client-node';
import { pingEvent } from '../../events/outgoing.js';
import { PAGE_SIZE } from '../../functions/kube/list-pages.js';
import { startBrokerStandIn, type BrokerStandIn } from '../lib/broker-stand-in.js';
import { createNamespace, type BenchCluster } from '../lib/cluster.js';
import { names, requestCounts, type BenchContext, type RequestCounts } from '../lib/context.js';
import { FunctionProcess, SHIPPED_VARIANT, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, editConfiguration, waitDeploymentsObserved } from '../lib/objects.js';
import { summarize, type Summary } from '../lib/stats.js';

// P6: one resync pass (a PingSource event) over n Gateways.
//
// After (the main build): the pass lists what the plans read, plans every
// Gateway in memory and fans out a reconcile request only for the Gateways
// that drifted (functions/dispatch/resync.ts). K_SINK is a stand-in for the
// Broker's ingress (bench/lib/broker-stand-in.ts): it takes each request with
// 202 and counts it, so a pass answers once its fan-out is handed over, as
// with a Broker. Measured on a fresh process each size: in-sync passes (time,
// audit-log requests, writes), then d Gateways whose Deployment was edited by
// hand (exactly d requests must reach the sink), then every Gateway drifted
// at once (the GatewayConfiguration edited: n requests). Peak memory: the
// process's VmHWM, after the in-sync passes and after the all-drifted pass.
//
// Before (--p6-before, an older build): its pass fanned out one reconcile per
// Gateway back to itself and answered when all had answered; one in-sync
// pass per size, on a fresh process.

export interface PassFigures {
  /** Event posted → answered. */
  ms: number;
  status: number;
  outcome: string;
  /** Requests of the controller identity in the pass (audit log). */
  counts: RequestCounts;
  /** Gateways the pass planned, and the API requests it counted itself (log line). */
  planned?: number;
  requests?: number;
  /** Reconcile requests the Broker stand-in took. */
  fannedOut: number;
}

export interface P6Size {
  n: number;
  passes: number;
  /** In-sync passes. */
  ms: Summary;
  /** The last in-sync pass. */
  inSync: PassFigures;
  /** At most 10 requests plus one per extra 500-object page of the lists that grow with n (Gateways, LB Deployments). */
  requestAllowance: number;
  /** VmHWM after a warm-up pass and the in-sync passes. */
  peakMb: number;
  drift: PassFigures & { d: number; exact: boolean };
  allDrifted: PassFigures & { peakMb: number };
  before?: PassFigures & { peakMb: number; variant: string };
}

export interface P6Result {
  sizes: P6Size[];
  /** Every in-sync pass within its allowance and writing nothing, every drift pass exact, every all-drifted pass answered 2xx. */
  ok: boolean;
}

/** How many passes the converge step may take before it gives up. */
const CONVERGE_PASSES = 6;

function mbOf(kb: number): number {
  return Math.round((kb / 1024) * 10) / 10;
}

async function editImage(c: BenchCluster, namespace: string, name: string, image: string): Promise<void> {
  const apps = c.admin.makeApiClient(AppsV1Api);
  for (let i = 0; ; i++) {
    const live = await apps.readNamespacedDeployment({ namespace, name });
    const containers = (live.spec?.template.spec?.containers ?? []).map((ct) => ({ ...ct, image }));
    try {
      await apps.replaceNamespacedDeployment({ namespace, name, body: { ...live, spec: { ...live.spec!, template: { ...live.spec!.template, spec: { ...live.spec!.template.spec!, containers } } } } });
      return;
    } catch (err) {
      if (i > 5 || !(err instanceof ApiException && err.code === 409)) throw err;
    }
  }
}

async function onePass(ctx: BenchContext, fn: FunctionProcess, sink: BrokerStandIn | undefined): Promise<PassFigures> {
  sink?.clear();
  const window = await ctx.cluster.audit.begin();
  const ev = pingEvent();
  const r = await fn.post(ev);
  const events = await window.end();
  const line = await fn.handled(ev.id, 120_000);
  return {
    ms: r.ms,
    status: r.status,
    outcome: line.outcome ?? '?',
    counts: requestCounts(events, ctx.identity.username),
    ...(typeof line.planned === 'number' ? { planned: line.planned } : {}),
    ...(typeof line.requests === 'number' ? { requests: line.requests } : {}),
    fannedOut: sink?.keys.length ?? 0,
  };
}

/**
 * Reconciles until a pass finds nothing to do: the function fans out to
 * itself and answers when every reconcile has, with a budget large enough
 * for thousands of creates.
 */
async function converge(ctx: BenchContext, ns: string, n: number, variant: Variant | undefined): Promise<void> {
  const base = variant ?? SHIPPED_VARIANT;
  const fn = await FunctionProcess.start({ variant: { ...base, env: { ...base.env, INVOCATION_BUDGET_MS: '3600000', API_REQUEST_TIMEOUT_MS: '60000' } }, kubeconfig: ctx.identity.kubeconfig, namespaces: [ns] });
  try {
    for (let i = 0; i < CONVERGE_PASSES; i++) {
      const ev = pingEvent();
      // A pass over thousands of creates can outlast the HTTP client's
      // response-headers timeout (300 s); the function's log line of the
      // event carries the same status and outcome, so wait for that instead.
      void fn.post(ev).catch(() => undefined);
      const line = await fn.handled(ev.id, 3_600_000);
      const status = line.status ?? 0;
      ctx.log(`P6 n=${n}: converge pass ${i + 1}: ${status} ${line.outcome} (${line.gateways ?? 0} reconciled) in ${Math.round(line.durationMs ?? 0)} ms`);
      if (status < 300 && line.outcome === 'no-gateway-affected') return;
      // What the deployment controller reports of the writes feeds
      // LoadBalancerAvailable: the next pass must see it.
      if (status < 300) await waitDeploymentsObserved(ctx.cluster, ns, n, 600_000);
    }
    throw new Error(`P6 n=${n}: not converged after ${CONVERGE_PASSES} passes`);
  } finally {
    await fn.stop();
  }
}

export async function measureResync(ctx: BenchContext, opts: { sizes: number[]; passes: number; variant?: Variant; before?: Variant }): Promise<P6Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p6');
  await createConfiguration(c, ns, 'cfg');
  const sink = await startBrokerStandIn();
  const out: P6Size[] = [];
  let have = 0;
  try {
    for (const n of [...opts.sizes].sort((a, b) => a - b)) {
      ctx.log(`P6 n=${n}: creating ${n - have} Gateways`);
      await createGateways(c, ns, names('gw', have, n), ctx.className, 'cfg');
      have = Math.max(have, n);
      await converge(ctx, ns, n, opts.variant);

      let before: P6Size['before'];
      if (opts.before) {
        ctx.log(`P6 n=${n}: one pass of ${opts.before.name}`);
        const old = await FunctionProcess.start({ variant: opts.before, kubeconfig: identity.kubeconfig, namespaces: [ns] });
        try {
          const pass = await onePass(ctx, old, undefined);
          before = { ...pass, peakMb: mbOf(old.memory().hwmKb), variant: opts.before.name };
        } finally {
          await old.stop();
        }
        // A pass cut off by its budget may have left reconciles half done.
        await converge(ctx, ns, n, opts.variant);
      }

      ctx.log(`P6 n=${n}: measuring ${opts.passes} in-sync passes`);
      const fn = await FunctionProcess.start({ ...(opts.variant ? { variant: opts.variant } : {}), kubeconfig: identity.kubeconfig, namespaces: [ns], sink: sink.url });
      try {
        // Warm-up: the first event of a process opens its connections.
        await onePass(ctx, fn, sink);
        const times: number[] = [];
        let inSync: PassFigures | undefined;
        for (let p = 0; p < opts.passes; p++) {
          inSync = await onePass(ctx, fn, sink);
          if (inSync.status >= 300) throw new Error(`P6 n=${n}: in-sync pass answered ${inSync.status} (${inSync.outcome})`);
          times.push(inSync.ms);
        }
        const peakMb = mbOf(fn.memory().hwmKb);

        const d = Math.min(100, Math.max(2, Math.floor(n / 10)));
        const edited = names('gw', 0, n).filter((_, i) => i % Math.floor(n / d) === 0).slice(0, d);
        ctx.log(`P6 n=${n}: ${edited.length} Deployments edited by hand`);
        for (const name of edited) await editImage(c, ns, `sllbr-${name}`, 'example.invalid/hand-edited:1');
        const drift = await onePass(ctx, fn, sink);
        const exact = drift.fannedOut === edited.length && [...sink.keys].sort().join() === edited.map((g) => `${ns}/${g}`).sort().join();

        ctx.log(`P6 n=${n}: the GatewayConfiguration edited: every Gateway drifted`);
        await editConfiguration(c, ns, 'cfg');
        const all = await onePass(ctx, fn, sink);
        out.push({
          n,
          passes: opts.passes,
          ms: summarize(times),
          inSync: inSync as PassFigures,
          requestAllowance: 10 + 2 * (Math.ceil(n / PAGE_SIZE) - 1),
          peakMb,
          drift: { ...drift, d: edited.length, exact },
          allDrifted: { ...all, peakMb: mbOf(fn.memory().hwmKb) },
          ...(before ? { before } : {}),
        });
      } finally {
        await fn.stop();
      }
    }
  } finally {
    await sink.close();
  }
  const ok = out.every((s) => s.inSync.counts.writes === 0 && s.inSync.counts.total <= s.requestAllowance && s.drift.exact && s.allDrifted.status < 300);
  return { sizes: out, ok };
}
