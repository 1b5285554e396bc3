import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { reconcileEvent } from '../../events/outgoing.js';
import { freePort } from '../../tools/controlplane/free-port.js';
import { createNamespace } from '../lib/cluster.js';
import { names, type BenchContext } from '../lib/context.js';
import { FunctionProcess, probeReady, readMemory, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, getGateway, appliedWith } from '../lib/objects.js';
import { repoRoot } from '../../tools/harness/repo-root.js';
import { summarize, type Summary } from '../lib/stats.js';
import { compileCacheSize, type PreparedVariants } from '../lib/variants.js';
import type { DependencyCosts, ImportCost, SnapshotFloor } from '../explore/dependency-costs.js';
import { cleanEnv, runNode } from '../lib/run-node.js';
import { serviceAccountToken } from '../../tools/harness/service-account-identity.js';

const BENCH_SENDER = 'bench-sender';

// P1: cold start of the function process, per build variant, spawns
// interleaved across variants so that machine noise hits all alike.
// - spawn → ready: spawn() until GET /readyz first answers 200 (polled every 2 ms);
// - spawn → first reconcile: spawn() until the first reconcile request,
//   posted the moment /readyz answered (as Knative's activator forwards the
//   request it held once the revision is ready), is answered 2xx having
//   created the Deployment and written the status (outcome "applied",
//   checked afterwards with a read of the Gateway).
// Each spawn reconciles a fresh Gateway, so the first reconcile always creates.

export interface P1Variant {
  variant: string;
  describe: string;
  entryBytes: number;
  compileCacheBytes?: number;
  spawns: number;
  ready: Summary;
  firstReconcile: Summary;
  /** ready → first reconcile answered: the cold path of the first event. */
  firstEvent: Summary;
  /** VmRSS right after the first reconcile (MB). */
  rssAfterFirstMb: Summary;
  /**
   * This variant minus the first one (the shipped build), spawn by spawn
   * within each round: on a loaded machine both of a round's spawns see
   * about the same load, so the median of these differences resolves what
   * the difference of two medians cannot. Absent for the first variant.
   */
  pairedDifference?: { ready: Summary; firstReconcile: Summary };
  /**
   * CPU time the process (all its threads) had used when it was ready (ms,
   * from /proc/<pid>/task/<tid>/schedstat): what a start costs, much less
   * moved by other work on the machine than the wall-clock figures.
   */
  cpuToReadyMs?: Summary;
}

/** CPU time of every thread of a process so far, in ms (Linux schedstat: nanoseconds on the CPU). */
export function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return ns / 1e6;
}

export interface P1Result {
  variants: P1Variant[];
  /** Floors: `node -e 0` spawn → exit, and a bare node:http server spawn → /readyz 200. */
  floors: { nodeExitMs: Summary; bareServerReadyMs: Summary; bareServerRssMb: Summary };
  /** What each dependency costs alone (`--explore` only). */
  imports?: ImportCost[];
  snapshotFloors?: SnapshotFloor[];
}

export async function measureColdStart(ctx: BenchContext, opts: { spawns: number; prepared: PreparedVariants; floorRepeats: number; dependencies?: () => Promise<DependencyCosts> }): Promise<P1Result> {
  const { cluster: c, identity } = ctx;
  const { variants } = opts.prepared;
  const ns = await createNamespace(c, 'bench-p1');
  await createConfiguration(c, ns, 'cfg');
  const total = opts.spawns * variants.length + variants.length;
  await createGateways(c, ns, names('cold', 0, total), ctx.className, 'cfg');
  // A variant that verifies senders admits one ServiceAccount of this
  // namespace, and each first event carries its token (minted once, as a
  // Trigger's identity reuses one token for most of an hour): each spawn
  // then verifies it cold, the issuer's keys read on that first event.
  const sender = async (variant: Variant): Promise<{ env: Record<string, string>; authorization: string } | undefined> => {
    const audience = variant.env.SENDER_AUTH_AUDIENCE;
    if (variant.env.SENDER_AUTH === undefined || variant.env.SENDER_AUTH === 'off' || audience === undefined) return undefined;
    const token = await serviceAccountToken(c.admin, ns, BENCH_SENDER, 3600, [audience]);
    return { env: { SENDER_AUTH_ALLOWED: `${ns}/${BENCH_SENDER}` }, authorization: `Bearer ${token}` };
  };
  const senders = new Map<string, Awaited<ReturnType<typeof sender>>>();
  for (const v of variants) senders.set(v.name, await sender(v));
  let next = 0;
  const one = async (variant: Variant): Promise<{ ready: number; first: number; rssMb: number; cpu: number }> => {
    const name = `cold-${String(next++).padStart(4, '0')}`;
    const auth = senders.get(variant.name);
    const fn = await FunctionProcess.start({ variant, kubeconfig: identity.kubeconfig, namespaces: [ns], ...(auth ? { env: auth.env } : {}) });
    const cpu = cpuMs(fn.pid);
    try {
      const ev = reconcileEvent({ namespace: ns, name });
      const r = await fn.post(ev, '/', auth ? { authorization: auth.authorization } : {});
      const first = performance.now() - fn.spawnedAt;
      const line = await fn.handled(ev.id);
      if (r.status >= 300) throw new Error(`first reconcile of ${name} (${variant.name}) answered ${r.status}: ${line.outcome} ${String(line.detail ?? '')}`);
      if (line.outcome !== 'applied') throw new Error(`first reconcile of ${name} (${variant.name}): outcome ${line.outcome}`);
      const rssMb = fn.memory().rssKb / 1024;
      if (!appliedWith(await getGateway(c, ns, name), 1)) throw new Error(`${name} is not Applied after its first reconcile`);
      return { ready: fn.readyMs, first, rssMb, cpu };
    } finally {
      await fn.stop();
    }
  };

  // Prime the compile caches the way an image build would: one run that
  // serves a reconcile and exits cleanly (the cache is written at exit).
  for (const v of variants) {
    if (v.env.NODE_COMPILE_CACHE !== undefined) {
      await one(v);
      if (!existsSync(v.env.NODE_COMPILE_CACHE)) throw new Error(`compile cache of ${v.name} was not written`);
    }
  }
  const samples = new Map<string, { ready: number[]; first: number[]; rss: number[]; cpu: number[] }>();
  for (let i = 0; i < opts.spawns; i++) {
    ctx.log(`P1 round ${i + 1}/${opts.spawns}`);
    for (const v of variants) {
      const s = await one(v);
      const acc = samples.get(v.name) ?? { ready: [], first: [], rss: [], cpu: [] };
      acc.ready.push(s.ready);
      acc.cpu.push(s.cpu);
      acc.first.push(s.first);
      acc.rss.push(s.rssMb);
      samples.set(v.name, acc);
    }
  }
  const base = samples.get(variants[0]?.name ?? '');
  const paired = (mine: number[], theirs: number[] | undefined): Summary => summarize(mine.map((x, i) => x - (theirs?.[i] ?? Number.NaN)).filter((d) => !Number.isNaN(d)));
  const rows: P1Variant[] = variants.map((v, index) => {
    const s = samples.get(v.name) ?? { ready: [], first: [], rss: [], cpu: [] };
    const cacheDir = opts.prepared.cacheDirs[v.name];
    return {
      variant: v.name,
      describe: v.describe,
      entryBytes: opts.prepared.sizes[v.name] ?? 0,
      ...(cacheDir ? { compileCacheBytes: compileCacheSize(cacheDir) } : {}),
      spawns: s.ready.length,
      ready: summarize(s.ready),
      firstReconcile: summarize(s.first),
      firstEvent: summarize(s.first.map((f, i) => f - (s.ready[i] ?? 0))),
      rssAfterFirstMb: summarize(s.rss),
      ...(index > 0 ? { pairedDifference: { ready: paired(s.ready, base?.ready), firstReconcile: paired(s.first, base?.first) } } : {}),
      cpuToReadyMs: summarize(s.cpu),
    };
  });

  ctx.log('P1 floors');
  const floors = await measureFloors(opts.floorRepeats);
  if (!opts.dependencies) return { variants: rows, floors };
  ctx.log('P1 dependency costs (--explore)');
  return { variants: rows, floors, ...(await opts.dependencies()) };
}

async function measureFloors(repeats: number): Promise<P1Result['floors']> {
  const exit: number[] = [];
  const ready: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await runNode(['-e', '0']);
    exit.push(performance.now() - t);
    const port = await freePort();
    const server = `require('node:http').createServer((q, s) => s.end()).listen(${port}, '127.0.0.1'); process.on('SIGTERM', () => process.exit(0));`;
    const t0 = performance.now();
    const p = spawn(process.execPath, ['-e', server], { cwd: repoRoot(), env: cleanEnv(), stdio: 'ignore' });
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    for (;;) {
      if (await probeReady(`http://127.0.0.1:${port}`)) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    ready.push(performance.now() - t0);
    rss.push(readMemory(p.pid ?? 0).rssKb / 1024);
    p.kill('SIGTERM');
    await exited;
  }
  return { nodeExitMs: summarize(exit), bareServerReadyMs: summarize(ready), bareServerRssMb: summarize(rss) };
}
