import { tmpdir } from 'node:os';
import { ControlPlane, type ClusterInfo } from '../tools/controlplane/control-plane.js';
import type { BenchContext } from './lib/context.js';
import type { Machine } from './lib/machine.js';
import { repoRoot } from '../tools/harness/repo-root.js';
import { EXPLORE_P1_VARIANTS, EXPLORE_P5_VARIANTS, exploratoryBuilds } from './explore/builds.js';
import { measureDependencyCosts } from './explore/dependency-costs.js';
import { startOtlpSink } from './lib/otlp-sink.js';
import { prepareVariants, TELEMETRY_VARIANT } from './lib/variants.js';
import { measureColdStart, type P1Result } from './measures/cold-start.js';
import { measureFanOut, type P4Result } from './measures/fan-out.js';
import { measureMemory, type P5Result } from './measures/memory.js';
import { measureRequests, type P3Result } from './measures/requests.js';
import { measureResync, type P6Result } from './measures/resync.js';
import { measurePluginStatus, type P9Result } from './measures/plugin-status.js';
import { measureDrain, type P10Result } from './measures/drain.js';
import { connect } from './lib/cluster.js';
import { setUp, tearDown } from './lib/setup.js';
import { memoryCgroupsAvailable, shippedMemoryLimit } from './lib/memory-cgroup.js';
import { measureRouteRead, type P7Result } from './measures/route-read.js';
import { measureWarmLatency, type P2Result } from './measures/warm-latency.js';

// The whole benchmark over one cluster connection: which figures, at which
// sizes, and the results document they make. The default run measures the
// shipped build; `explore` adds the other builds to P1 and P5 and what each
// dependency costs alone (bench/explore/).

export const FIGURES = ['P1', 'P2', 'P3', 'P4', 'P5', 'P6', 'P7', 'P9', 'P10'] as const;
export type Figure = (typeof FIGURES)[number];

export interface BenchOptions {
  quick: boolean;
  /** --explore: the exploratory builds in P1 and P5, and P1's dependency costs. */
  explore: boolean;
  only: Figure[];
  p1Spawns: number;
  p1Variants: string[];
  /** Repeats of P1's floors and, with explore, of each dependency's cost. */
  p1ImportRepeats: number;
  p2Samples: number;
  p2ChangeSamples: number;
  p2Warmup: number;
  p3Repeats: number;
  p4Sizes: number[];
  p4Repeats: number;
  p5Concurrency: number;
  p5Repeats: number;
  p5Variants: string[];
  p6Sizes: number[];
  p6Passes: number;
  /** An older build to measure P6 with too (its resync reconciled every Gateway): a --variant-entry name. */
  p6Before?: string;
  /** Builds measured exactly as the main one in P6, pass by pass beside it (--variant-entry names). */
  p6Compare: string[];
  /** The memory limit P6's function processes run under (a cgroup); null: none. Default: the Service's limit, where this machine lets the bench enforce it. */
  p6MemoryLimit: string | null;
  /** L34Routes in the Gateway's namespace, per P7 row. */
  p7Routes: number[];
  p7Samples: number;
  /** Gateways per P9 row (`kubectl meridio status -A`), and its runs per row. */
  p9Sizes: number[];
  p9Repeats: number;
  /** Gateways per P10 row (the drain after a template change), and the LB_ROLLOUT_BUDGET of each. */
  p10Sizes: number[];
  p10Budgets: number[];
  /** How long one P10 drain may run; past it, the row is of the prefix that rolled. */
  p10DeadlineMinutes: number;
  controllerManager: boolean;
  /** The build every figure but P1 and P5 runs (default tsc, the shipped one). */
  mainVariant: string;
  /** Extra variants: name → entry file (--variant-entry name=path). */
  customVariants: Record<string, string>;
  /** Their extra environment (--variant-env name:KEY=VALUE). */
  customEnv: Record<string, Record<string, string>>;
}

/** Quick: small sizes, a smoke test. Explore: the exploratory builds too (quick explore: two of them). */
export function defaultOptions(quick: boolean, explore = false): BenchOptions {
  // Telemetry off (shipped) and on, interleaved: what OpenTelemetry costs the cold start and idle memory.
  const p1Variants = explore ? (quick ? ['shipped', 'snapshot-default-heap', 'bundle-min'] : EXPLORE_P1_VARIANTS) : ['shipped', TELEMETRY_VARIANT];
  const p5Variants = explore ? (quick ? ['shipped', 'snapshot-default-heap'] : EXPLORE_P5_VARIANTS) : ['shipped', TELEMETRY_VARIANT];
  // The Service's memory limit, enforced where the machine allows (cgroup v1, root); otherwise none.
  const p6MemoryLimit = memoryCgroupsAvailable() ? shippedMemoryLimit() : null;
  const shared = { quick, explore, only: [...FIGURES], p1Variants, p5Variants, p6Compare: [], p6MemoryLimit, controllerManager: false, mainVariant: 'shipped', customVariants: {}, customEnv: {} };
  return quick
    ? {
        ...shared, p1Spawns: 3, p1ImportRepeats: explore ? 1 : 0, p2Samples: 20, p2ChangeSamples: 5, p2Warmup: 3,
        p3Repeats: 1, p4Sizes: [10], p4Repeats: 1, p5Concurrency: 20, p5Repeats: 1, p6Sizes: [10, 20, 40], p6Passes: 1, p7Routes: [0, 50], p7Samples: 5, p9Sizes: [20], p9Repeats: 1,
        p10Sizes: [20], p10Budgets: [1, 5], p10DeadlineMinutes: 10,
      }
    : {
        ...shared, p1Spawns: 20, p1ImportRepeats: 5, p2Samples: 200, p2ChangeSamples: 50, p2Warmup: 10,
        p3Repeats: 3, p4Sizes: [10, 100, 500], p4Repeats: 3, p5Concurrency: 100, p5Repeats: 3, p6Sizes: [1000, 10000], p6Passes: 3, p7Routes: [0, 1000, 5000], p7Samples: 30, p9Sizes: [1000], p9Repeats: 3,
        p10Sizes: [1000, 10000], p10Budgets: [1, 50], p10DeadlineMinutes: 60,
      };
}

export interface BenchResults {
  schema: 1;
  startedAt: string;
  finishedAt?: string;
  mode: 'quick' | 'full';
  options: BenchOptions;
  machine: Machine;
  controlPlane: { versions: ClusterInfo['versions']; controllerManager: boolean; startMs: number };
  /** Wall time per figure (ms). */
  durations: Partial<Record<Figure, number>>;
  p1?: P1Result;
  p2?: P2Result;
  p3?: P3Result;
  p4?: P4Result;
  p5?: P5Result;
  p6?: P6Result;
  p7?: P7Result;
  p9?: P9Result;
  p10?: P10Result;
  errors: Partial<Record<Figure, string>>;
}

/** Runs the selected figures in order; a failing figure is recorded and the others still run. */
export async function runFigures(ctx: BenchContext, o: BenchOptions, results: BenchResults): Promise<void> {
  const timed = async <T>(fig: Figure, run: () => Promise<T>): Promise<T | undefined> => {
    if (!o.only.includes(fig)) return undefined;
    const t = performance.now();
    ctx.log(`${fig}: start`);
    try {
      return await run();
    } catch (err) {
      ctx.log(`${fig}: FAILED ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      // No machine paths in the results file.
      results.errors[fig] = (err instanceof Error ? err.message : String(err)).split(repoRoot()).join('<repo>').split(tmpdir()).join('<tmp>');
      return undefined;
    } finally {
      results.durations[fig] = Math.round(performance.now() - t);
      ctx.log(`${fig}: done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
  };
  const names = [...new Set([o.mainVariant, ...(o.only.includes('P1') ? o.p1Variants : []), ...(o.only.includes('P5') ? o.p5Variants : []), ...(o.only.includes('P6') && o.p6Before ? [o.p6Before] : []), ...(o.only.includes('P6') ? o.p6Compare : [])])];
  const sink = names.includes(TELEMETRY_VARIANT) ? await startOtlpSink() : undefined;
  const prepared = prepareVariants(names, { custom: o.customVariants, customEnv: o.customEnv, ...(o.explore ? { builds: exploratoryBuilds() } : {}), ...(sink ? { otlpEndpoint: sink.url } : {}) });
  const main = prepared.byName(o.mainVariant);
  try {
    const p1 = await timed('P1', () => measureColdStart(ctx, {
      spawns: o.p1Spawns,
      prepared: { ...prepared, variants: o.p1Variants.map((n) => prepared.byName(n)) },
      floorRepeats: Math.max(3, o.p1ImportRepeats),
      ...(o.explore && o.p1ImportRepeats > 0 ? { dependencies: () => measureDependencyCosts(o.p1ImportRepeats) } : {}),
    }));
    if (p1) results.p1 = p1;
    const p2 = await timed('P2', () => measureWarmLatency(ctx, { samples: o.p2Samples, changeSamples: o.p2ChangeSamples, warmup: o.p2Warmup, variant: main }));
    if (p2) results.p2 = p2;
    const p3 = await timed('P3', () => measureRequests(ctx, { repeats: o.p3Repeats, variant: main }));
    if (p3) results.p3 = p3;
    const p4 = await timed('P4', () => measureFanOut(ctx, { sizes: o.p4Sizes, repeats: o.p4Repeats, variant: main }));
    if (p4) results.p4 = p4;
    const p5 = await timed('P5', () => measureMemory(ctx, { concurrency: o.p5Concurrency, repeats: o.p5Repeats, variants: o.p5Variants.map((n) => prepared.byName(n)) }));
    if (p5) results.p5 = p5;
    const p6 = await timed('P6', () => measureResync(ctx, {
      sizes: o.p6Sizes,
      passes: o.p6Passes,
      variant: main,
      ...(o.p6Before ? { before: prepared.byName(o.p6Before) } : {}),
      compare: o.p6Compare.map((n) => prepared.byName(n)),
      ...(o.p6MemoryLimit !== null ? { memoryLimit: o.p6MemoryLimit } : {}),
    }));
    if (p6) results.p6 = p6;
    const p7 = await timed('P7', () => measureRouteRead(ctx, { routeCounts: o.p7Routes, samples: o.p7Samples, variant: main }));
    if (p7) results.p7 = p7;
    const p9 = await timed('P9', () => measurePluginStatus(ctx, { sizes: o.p9Sizes, repeats: o.p9Repeats, variant: main }));
    if (p9) results.p9 = p9;
    const p10 = await timed('P10', () => withControllerManager(ctx, (c) => measureDrain(c, { sizes: o.p10Sizes, budgets: o.p10Budgets, variant: main, deadlineMs: o.p10DeadlineMinutes * 60_000 })));
    if (p10) results.p10 = p10;
  } finally {
    prepared.dispose();
    await sink?.close();
  }
}

/**
 * kube-controller-manager's client rate and sync workers for thousands of
 * Deployments: at its default 20 requests a second, the Deployment
 * controller alone would take longer than the drain it is measured beside.
 */
export const CONTROLLER_MANAGER_SCALE_ARGS = ['--kube-api-qps=1000', '--kube-api-burst=2000', '--concurrent-deployment-syncs=20', '--concurrent-replicaset-syncs=20'];

/**
 * P10's rollouts are the Deployment controller's: without it in the bench's
 * control plane, P10 runs on one of its own that has it, so the other
 * figures keep theirs as measured.
 */
async function withControllerManager<T>(ctx: BenchContext, run: (ctx: BenchContext) => Promise<T>): Promise<T> {
  if (ctx.cluster.controllerManager) return run(ctx);
  ctx.log('P10: starting a control plane with kube-controller-manager');
  const cp = await ControlPlane.start({ controllerManager: true, controllerManagerArgs: CONTROLLER_MANAGER_SCALE_ARGS, log: (m) => ctx.log(`P10 controlplane: ${m}`) });
  let own: BenchContext | undefined;
  try {
    own = await setUp(connect(cp.info, { controllerManager: true }), ctx.log);
    return await run(own);
  } finally {
    if (own) await tearDown(own, { namespaces: false }).catch(() => undefined);
    await cp.stop();
  }
}
