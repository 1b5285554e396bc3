// `node dist/bench/explore/profile.js [--variant shipped] [--events N] [--burst N]`:
// where the time and the memory of the function go. Starts its own control
// plane, then
// 1. startup: one spawn under --cpu-prof, until the first reconcile answered;
// 2. warm no-op: N no-op reconciles under --cpu-prof, minus an identical run
//    without them (so that startup cancels out);
// 3. memory: the memory probe preloaded, read after start and after a burst.
// Prints markdown; writes bench/results/explore/profile-<date>-<variant>.json.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { reconcileEvent } from '../../events/outgoing.js';
import { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { diffSummaries, summarizeProfile, type ProfileSummary } from './cpu-profile.js';
import { connect, createNamespace } from '../lib/cluster.js';
import { names, reconcileVia, settle, sleep, type BenchContext } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, editConfiguration } from '../lib/objects.js';
import { repoPath, repoRoot } from '../../tools/harness/repo-root.js';
import { setUp, tearDown } from '../lib/setup.js';
import { prepareVariants } from '../lib/variants.js';
import { exploratoryBuilds } from './builds.js';

interface MemoryProbe {
  rssMb: number;
  hwmMb: number;
  anonMb: number;
  fileMb: number;
  heapTotalMb: number;
  heapUsedMb: number;
  externalMb: number;
  bytecodeAndCodeMb: number;
  scriptSourceMb: number;
  spaces: Record<string, { usedMb: number; residentMb: number }>;
}

async function profiled(ctx: BenchContext, variant: Variant, ns: string, dir: string, body: (fn: FunctionProcess) => Promise<void>): Promise<ProfileSummary> {
  const fn = await FunctionProcess.start({ variant, kubeconfig: ctx.identity.kubeconfig, namespaces: [ns], nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=200'] });
  try {
    await body(fn);
  } finally {
    await fn.stop();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no .cpuprofile written');
  const summary = summarizeProfile(join(dir, file), repoRoot());
  rmSync(join(dir, file));
  return summary;
}

async function probe(fn: FunctionProcess): Promise<MemoryProbe> {
  const before = fn.stderrLines.length;
  fn.proc.kill('SIGUSR2');
  for (let i = 0; i < 200; i++) {
    const line = fn.stderrLines.slice(before).find((l) => l.includes('"probe":"memory"'));
    if (line) return JSON.parse(line) as MemoryProbe;
    await sleep(10);
  }
  throw new Error('memory probe did not answer');
}

function table(s: ProfileSummary, rows = 12): string {
  const L = ['| area | self time | share |', '|---|---|---|'];
  for (const a of s.byArea.slice(0, rows)) L.push(`| ${a.area} | ${a.ms} ms | ${a.share}% |`);
  L.push('', '| top functions (self) | where | ms |', '|---|---|---|');
  for (const f of s.topFunctions.slice(0, rows)) L.push(`| ${f.fn} | ${f.where} | ${f.ms} |`);
  return L.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { variant: { type: 'string' }, 'variant-entry': { type: 'string' }, events: { type: 'string' }, burst: { type: 'string' } }, strict: true });
  const variantName = values.variant ?? 'shipped';
  const custom: Record<string, string> = {};
  if (values['variant-entry'] !== undefined) {
    const eq = values['variant-entry'].indexOf('=');
    custom[values['variant-entry'].slice(0, eq)] = values['variant-entry'].slice(eq + 1);
  }
  const events = Number(values.events ?? '300');
  const burst = Number(values.burst ?? '100');
  const log = (m: string): void => { process.stderr.write(`[profile] ${m}\n`); };
  const prepared = prepareVariants([variantName], { custom, builds: exploratoryBuilds() });
  const variant = prepared.variants[0] as Variant;
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-bench-prof-'));
  const cp = await ControlPlane.start({ controllerManager: false, log: (m) => log(m) });
  const out: Record<string, unknown> = { variant: variant.name };
  const md: string[] = [];
  try {
    const ctx = await setUp(connect(cp.info, { controllerManager: false }), log);
    try {
      const ns = await createNamespace(ctx.cluster, 'bench-prof');
      await createConfiguration(ctx.cluster, ns, 'cfg');
      const gws = names('gw', 0, burst);
      await createGateways(ctx.cluster, ns, ['first', 'warm', ...gws], ctx.className, 'cfg');

      if (variant.env.NODE_COMPILE_CACHE !== undefined) {
        const fn = await FunctionProcess.start({ variant, kubeconfig: ctx.identity.kubeconfig, namespaces: [ns] });
        await reconcileVia(fn, { namespace: ns, name: 'warm' });
        await fn.stop();
      }

      log('startup profile');
      const startup = await profiled(ctx, variant, ns, dir, async (fn) => {
        const r = await reconcileVia(fn, { namespace: ns, name: 'first' });
        if (r.outcome !== 'applied') throw new Error(`first reconcile: ${r.outcome}`);
      });
      out.startup = startup;
      md.push(`### Startup to first reconcile (${variant.name}), ${startup.totalMs} ms sampled`, '', table(startup), '');

      log(`no-op profile (${events} events, minus a run without them)`);
      const warmUpOnly = async (fn: FunctionProcess): Promise<void> => {
        await reconcileVia(fn, { namespace: ns, name: 'warm' });
        await settle(fn, { namespace: ns, name: 'warm' });
      };
      const base = await profiled(ctx, variant, ns, dir, warmUpOnly);
      let noopMs = 0;
      const withEvents = await profiled(ctx, variant, ns, dir, async (fn) => {
        await warmUpOnly(fn);
        const t = performance.now();
        for (let i = 0; i < events; i++) await fn.post(reconcileEvent({ namespace: ns, name: 'warm' }));
        noopMs = performance.now() - t;
      });
      const noop = diffSummaries(withEvents, base);
      out.noop = { ...noop, events, wallMs: Math.round(noopMs) };
      md.push(`### ${events} warm no-op reconciles (${variant.name}): ${Math.round(noopMs)} ms wall, ${noop.totalMs} ms on the function's main thread (${(noop.totalMs / events).toFixed(2)} ms per event)`, '', table(noop, 20), '');

      if (variant.args !== undefined) {
        // A startup snapshot runs its own main function: --import preloads nothing there.
        md.push(`### Memory (${variant.name})`, '', 'Not measured: the memory probe is preloaded with --import, which a startup snapshot does not run.', '');
      } else {
        log('memory breakdown');
        await editConfiguration(ctx.cluster, ns, 'cfg');
        const probeModule = repoPath('dist', 'bench', 'explore', 'probe', 'memory-probe.js');
        const fn = await FunctionProcess.start({ variant, kubeconfig: ctx.identity.kubeconfig, namespaces: [ns], nodeArgs: ['--import', probeModule] });
        try {
          await sleep(2000);
          const idle = await probe(fn);
          await Promise.all(gws.map((name) => fn.post(reconcileEvent({ namespace: ns, name }))));
          const afterBurst = await probe(fn);
          await sleep(2000);
          const settled = await probe(fn);
          out.memory = { idle, afterBurst, settled, burst };
          const row = (k: string, m: MemoryProbe): string => `| ${k} | ${m.rssMb} | ${m.hwmMb} | ${m.fileMb} | ${m.anonMb} | ${m.heapUsedMb}/${m.heapTotalMb} | ${m.spaces.new_space?.residentMb ?? 0} | ${m.spaces.old_space?.residentMb ?? 0} | ${m.spaces.large_object_space?.residentMb ?? 0} | ${m.bytecodeAndCodeMb} | ${m.scriptSourceMb} | ${m.externalMb} |`;
          md.push(`### Memory (${variant.name}, MB)`, '', '| when | RSS | HWM | file-backed | anonymous | heap used/total | new space | old space | large objects | code+bytecode | script source | external |', '|---|---|---|---|---|---|---|---|---|---|---|---|', row('idle', idle), row(`after ${burst} concurrent`, afterBurst), row('2 s later', settled), '');
        } finally {
          await fn.stop();
        }
      }
    } finally {
      await tearDown(ctx, { namespaces: false });
    }
  } finally {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
    prepared.dispose();
  }
  const date = new Date().toISOString().slice(0, 10);
  writeFileSync(repoPath('bench', 'results', 'explore', `profile-${date}-${variant.name}.json`), `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`${md.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`profile failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
