import { AppsV1Api, ApiException } from '@kubernetes/client-node';
import { pingEvent } from '../../events/outgoing.js';
import { PAGE_SIZE } from '../../functions/kube/list-pages.js';
import { startBrokerStandIn, type BrokerStandIn } from '../lib/broker-stand-in.js';
import { createNamespace, type BenchCluster } from '../lib/cluster.js';
import { names, requestCounts, type BenchContext, type RequestCounts } from '../lib/context.js';
import { FunctionProcess, SHIPPED_VARIANT, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, editConfiguration, waitDeploymentsObserved } from '../lib/objects.js';
import { summarize, type Summary } from '../lib/stats.js';
import { createMemoryCgroup, type MemoryCgroup } from '../lib/memory-cgroup.js';
import { load1 } from '../lib/machine.js';

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
  /** The machine's 1-minute load average when the pass was answered (the machine is shared). */
  load?: number;
}

/** The enforced memory limit of a build's process (a cgroup with the Service's limit), read after its last pass. */
export interface LimitFigures {
  /** As infra/knative/service.yaml writes it. */
  limit: string;
  limitMb: number;
  /** The cgroup's peak charge (memory.max_usage_in_bytes: resident pages and page cache) after the in-sync passes, and at the end. */
  inSyncPeakMb: number;
  peakMb: number;
  /** memory.failcnt: charges that hit the limit (the kernel reclaimed page cache instead of failing). */
  failcnt: number;
  /** Processes the kernel killed for the limit (memory.oom_control). */
  oomKills: number;
}

/** What one build did at one size, measured phase by phase beside the others. */
export interface P6Build {
  variant: string;
  /** In-sync passes. */
  ms: Summary;
  /** The last in-sync pass. */
  inSync: PassFigures;
  /** VmHWM after a warm-up pass and the in-sync passes. */
  peakMb: number;
  drift: PassFigures & { d: number; exact: boolean };
  allDrifted: PassFigures & { peakMb: number };
  memoryLimit?: LimitFigures;
}

/** A build that did not finish its passes: killed (the limit) or crashed. */
export interface P6Stopped {
  variant: string;
  /** The phase it stopped in, and how its process ended. */
  phase: string;
  exit: string;
  /** VmHWM before the phase it died in (the last reading). */
  lastPeakMb: number;
  memoryLimit?: LimitFigures;
}

export interface P6Size extends P6Build {
  n: number;
  passes: number;
  /** At most 10 requests plus one per extra 500-object page of the lists that grow with n (Gateways, LB Deployments). */
  requestAllowance: number;
  /** 1-minute load average when the size's passes began and ended. */
  load?: { start: number; end: number };
  /** Other builds measured the same way in the same run, pass by pass beside the main one (--p6-compare). */
  compared?: (P6Build | P6Stopped)[];
  before?: PassFigures & { peakMb: number; variant: string };
}

export interface P6Result {
  sizes: P6Size[];
  /** The memory limit each pass ran under (none: not enforced). */
  memoryLimit?: string;
  /** Sizes whose main build stopped before its last pass (killed, or a pass not answered 2xx). */
  incomplete?: { n: number; builds: (P6Build | P6Stopped)[] }[];
  /** Every in-sync pass within its allowance and writing nothing, every drift pass exact, every all-drifted pass answered 2xx; under a limit, the main build never killed. */
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
    load: load1(),
  };
}

/**
 * Reconciles until a pass finds nothing to do: the function fans out to
 * itself and answers when every reconcile has, with a budget large enough
 * for thousands of creates.
 */
export async function converge(ctx: BenchContext, ns: string, n: number, variant: Variant | undefined, figure = 'P6'): Promise<void> {
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
      ctx.log(`${figure} n=${n}: converge pass ${i + 1}: ${status} ${line.outcome} (${line.gateways ?? 0} reconciled) in ${Math.round(line.durationMs ?? 0)} ms`);
      if (status < 300 && line.outcome === 'no-gateway-affected') return;
      // What the deployment controller reports of the writes feeds
      // LoadBalancerAvailable: the next pass must see it.
      if (status < 300) await waitDeploymentsObserved(ctx.cluster, ns, n, 600_000);
    }
    throw new Error(`${figure} n=${n}: not converged after ${CONVERGE_PASSES} passes`);
  } finally {
    await fn.stop();
  }
}

/** One build's process for a size's passes, in its own memory cgroup when a limit is enforced. */
interface Running {
  variant: Variant;
  fn: FunctionProcess;
  cgroup?: MemoryCgroup;
  figures: Partial<P6Build> & { variant: string; times: number[] };
  inSyncCgroupMb?: number;
  stopped?: P6Stopped;
}

function limitFigures(r: Running): LimitFigures | undefined {
  if (!r.cgroup) return undefined;
  const m = r.cgroup.read();
  const peakMb = mbOf(m.maxUsageBytes / 1024);
  return { limit: r.cgroup.limit, limitMb: mbOf(m.limitBytes / 1024), inSyncPeakMb: r.inSyncCgroupMb ?? peakMb, peakMb, failcnt: m.failcnt, oomKills: m.oomKills };
}

/** A pass that did not answer 2xx: the build stops there (recorded), the others go on. */
class PassFailed extends Error {}

/** One pass of a build; an answer other than 2xx stops the build (a PassFailed). */
async function checkedPass(ctx: BenchContext, r: Running, sink: BrokerStandIn): Promise<PassFigures> {
  const pass = await onePass(ctx, r.fn, sink);
  if (pass.status >= 300) throw new PassFailed(`answered ${pass.status} (${pass.outcome}) after ${Math.round(pass.ms)} ms`);
  return pass;
}

/**
 * Runs `step` for a build unless it has stopped; a build whose process ends
 * during the step (killed at the limit) is recorded as stopped, not thrown.
 */
async function phase(ctx: BenchContext, r: Running, name: string, step: () => Promise<void>): Promise<void> {
  if (r.stopped) return;
  const peakBefore = r.fn.exit ? 0 : mbOf(r.fn.memory().hwmKb);
  try {
    await step();
  } catch (err) {
    // A killed process answers nothing; give its exit a moment to be seen.
    for (let i = 0; i < 50 && !r.fn.exit; i++) await new Promise((res) => setTimeout(res, 100));
    const exit = r.fn.exit;
    if (!exit && !(err instanceof PassFailed)) throw err;
    const limit = limitFigures(r);
    r.stopped = { variant: r.variant.name, phase: name, exit: exit ? (exit.signal ?? `exit code ${exit.code}`) : err instanceof Error ? err.message : String(err), lastPeakMb: peakBefore, ...(limit ? { memoryLimit: limit } : {}) };
    ctx.log(`P6: ${r.variant.name} stopped in ${name}: ${r.stopped.exit}${limit ? `, cgroup oom_kill ${limit.oomKills}, peak ${limit.peakMb} MB` : ''}`);
  }
}

export async function measureResync(ctx: BenchContext, opts: { sizes: number[]; passes: number; variant?: Variant; before?: Variant; compare?: Variant[]; memoryLimit?: string }): Promise<P6Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p6');
  await createConfiguration(c, ns, 'cfg');
  const sink = await startBrokerStandIn();
  const out: P6Size[] = [];
  const incomplete: NonNullable<P6Result['incomplete']> = [];
  const main = opts.variant ?? SHIPPED_VARIANT;
  let have = 0;
  try {
    for (const n of [...opts.sizes].sort((a, b) => a - b)) {
      ctx.log(`P6 n=${n}: creating ${n - have} Gateways`);
      await createGateways(c, ns, names('gw', have, n), ctx.className, 'cfg', 16);
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

      // Every build on a fresh process of its own, each in its own cgroup
      // with the limit; the phases run build after build, so that each
      // phase finds the same objects for all of them (the stand-in Broker
      // reconciles nothing).
      const loadStart = load1();
      const running: Running[] = [];
      try {
        for (const [i, variant] of [main, ...(opts.compare ?? [])].entries()) {
          const cgroup = opts.memoryLimit === undefined ? undefined : createMemoryCgroup(`meridio2-bench-p6-${process.pid}-${n}-${i}`, opts.memoryLimit);
          const r: Running = { variant, fn: undefined as unknown as FunctionProcess, ...(cgroup ? { cgroup } : {}), figures: { variant: variant.name, times: [] } };
          running.push(r);
          r.fn = await FunctionProcess.start({ variant, kubeconfig: identity.kubeconfig, namespaces: [ns], sink: sink.url, ...(cgroup ? { memoryCgroup: cgroup.path } : {}) });
        }
        ctx.log(`P6 n=${n}: ${opts.passes} in-sync passes of ${running.map((r) => r.variant.name).join(', ')}${opts.memoryLimit ? `, each under a ${opts.memoryLimit} memory cgroup` : ''}`);
        // Warm-up: the first event of a process opens its connections.
        for (const r of running) await phase(ctx, r, 'warm-up', async () => { await checkedPass(ctx, r, sink); });
        for (let p = 0; p < opts.passes; p++) {
          for (const r of running) {
            await phase(ctx, r, `in-sync pass ${p + 1}`, async () => {
              const pass = await checkedPass(ctx, r, sink);
              r.figures.inSync = pass;
              r.figures.times.push(pass.ms);
            });
          }
        }
        for (const r of running) {
          if (r.stopped) continue;
          r.figures.peakMb = mbOf(r.fn.memory().hwmKb);
          if (r.cgroup) r.inSyncCgroupMb = mbOf(r.cgroup.read().maxUsageBytes / 1024);
        }

        const d = Math.min(100, Math.max(2, Math.floor(n / 10)));
        const edited = names('gw', 0, n).filter((_, i) => i % Math.floor(n / d) === 0).slice(0, d);
        ctx.log(`P6 n=${n}: ${edited.length} Deployments edited by hand`);
        for (const name of edited) await editImage(c, ns, `sllbr-${name}`, 'example.invalid/hand-edited:1');
        for (const r of running) {
          await phase(ctx, r, 'd drifted', async () => {
            const drift = await checkedPass(ctx, r, sink);
            const exact = drift.fannedOut === edited.length && [...sink.keys].sort().join() === edited.map((g) => `${ns}/${g}`).sort().join();
            r.figures.drift = { ...drift, d: edited.length, exact };
          });
        }

        ctx.log(`P6 n=${n}: the GatewayConfiguration edited: every Gateway drifted`);
        await editConfiguration(c, ns, 'cfg');
        for (const r of running) {
          await phase(ctx, r, 'all drifted', async () => {
            const all = await checkedPass(ctx, r, sink);
            r.figures.allDrifted = { ...all, peakMb: mbOf(r.fn.memory().hwmKb) };
          });
        }
        const built: (P6Build | P6Stopped)[] = running.map((r) => {
          if (r.stopped) return r.stopped;
          const { times, ...f } = r.figures;
          const limit = limitFigures(r);
          return { ...(f as Omit<P6Build, 'ms'>), ms: summarize(times), ...(limit ? { memoryLimit: limit } : {}) };
        });
        const [first, ...others] = built;
        if (first === undefined || !('ms' in first)) {
          // The main build did not finish: kept as it stopped, and the run is not ok.
          incomplete.push({ n, builds: built });
          const s = first as P6Stopped;
          ctx.log(`P6 n=${n}: ${s.variant} stopped in ${s.phase} (${s.exit})${s.memoryLimit ? ` under the ${s.memoryLimit.limit} limit: cgroup peak ${s.memoryLimit.peakMb} MB, oom_kill ${s.memoryLimit.oomKills}` : ''}`);
          continue;
        }
        out.push({
          n,
          passes: opts.passes,
          requestAllowance: 10 + 2 * (Math.ceil(n / PAGE_SIZE) - 1),
          ...first,
          load: { start: loadStart, end: load1() },
          ...(others.length > 0 ? { compared: others } : {}),
          ...(before ? { before } : {}),
        });
      } finally {
        for (const r of running) {
          if (r.fn) await r.fn.stop();
          r.cgroup?.dispose();
        }
      }
    }
  } finally {
    await sink.close();
  }
  const ok = out.every((s) => s.inSync.counts.writes === 0 && s.inSync.counts.total <= s.requestAllowance && s.drift.exact && s.allDrifted.status < 300 && (s.memoryLimit?.oomKills ?? 0) === 0);
  return { sizes: out, ...(opts.memoryLimit ? { memoryLimit: opts.memoryLimit } : {}), ...(incomplete.length > 0 ? { incomplete } : {}), ok: ok && incomplete.length === 0 };
}
