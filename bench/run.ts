// `npm run bench [-- options]`: starts its own control plane, sets up the
// controller identity, runs P1–P8 against the shipped function as a real
// process, and writes bench/results/<date>.json and bench/REPORT.md; with
// --explore also the other builds and the dependency costs, in
// bench/EXPLORE.md. See --help.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ControlPlane } from '../tools/controlplane/control-plane.js';
import { connect } from './lib/cluster.js';
import type { BenchContext } from './lib/context.js';
import { describeMachine, endLoad } from './lib/machine.js';
import { repoPath } from '../tools/harness/repo-root.js';
import { setUp, tearDown } from './lib/setup.js';
import { parseVariantList, SENDER_AUTH_VARIANT, TELEMETRY_VARIANT } from './lib/variants.js';
import { EXPLORATORY_BUILDS } from './explore/builds.js';
import { renderExplore } from './explore/report.js';
import { explored, ImageFactsSchema, renderReport, ServingWakeSchema, type ImageFacts, type ServingWake } from './report.js';
import { CONTROLLER_MANAGER_SCALE_ARGS, FIGURES, defaultOptions, runFigures, type BenchOptions, type BenchResults, type Figure } from './suite.js';

const HELP = `Usage: npm run bench -- [options]

The default run measures the shipped build (the startup snapshot dist/function.blob,
started as the image starts it) in every figure, P1 to P6, and writes bench/REPORT.md.

  --quick                  small sizes, a smoke test (well under a minute)
  --only P1,P3             run only these figures (default: all)
  --explore                also the exploration of issue 8 and 13's cold-start work, not in
                           the default run: P1 and P5 compare other builds of the function
                           (bench/explore/builds.ts) with the shipped one, and P1 measures
                           what each dependency costs alone (import, startup-snapshot floor);
                           written to bench/EXPLORE.md as well
  --p1-spawns N            cold starts per variant (default 20; quick 3)
  --p1-variants a,b        shipped, shipped-sender-auth (SENDER_AUTH=required), shipped-telemetry
                           (the same with OTLP export on), any --variant-entry name, and with --explore:
                           snapshot-with-code-cache, snapshot-default-heap (no NODE_OPTIONS),
                           shipped-own-template (TEMPLATE_PATH not the default), tsc, bundle,
                           bundle-min, bundle-min-semi1 (+ NODE_OPTIONS=--max-semi-space-size=1);
                           any script variant + "-cache" (NODE_COMPILE_CACHE, primed first)
                           (default shipped,shipped-telemetry; with --explore shipped,snapshot-with-code-cache,
                           snapshot-default-heap,shipped-own-template,bundle-min-semi1-cache,
                           bundle-min-cache,bundle-min,tsc-cache,tsc; quick --explore
                           shipped,snapshot-default-heap,bundle-min)
  --p1-imports N           repeats of P1's floors (at least 3) and, with --explore, of each
                           dependency's cost (default 5; quick 0, quick --explore 1)
  --p2-samples N           no-op / bare GET samples (default 200; quick 20)
  --p2-change-samples N    configuration-change samples (default 50; quick 5)
  --p3-repeats N           repeats of every request-count scenario (default 3; quick 1)
  --p4-sizes a,b,c         Gateways sharing one configuration (default 10,100,500; quick 10)
  --p4-repeats N           edits per size (default 3; quick 1)
  --p5-concurrency N       concurrent events for the peak (default 100; quick 20)
  --p5-repeats N           fresh processes per variant (default 3; quick 1)
  --p5-variants a,b        as --p1-variants (default shipped,shipped-telemetry; with --explore shipped,
                           snapshot-with-code-cache,snapshot-default-heap,bundle-min-semi1-cache,
                           tsc; quick --explore shipped,snapshot-default-heap)
  --p6-sizes a,b,c         Gateways per resync pass (default 1000,10000; quick 10,20,40)
  --p6-passes N            in-sync passes per size (default 3; quick 1)
  --p6-before name         also one pass per size of this build (a --variant-entry name), for the
                           before/after comparison (e.g. a build of the commit before issue 17)
  --p6-compare a,b         also these builds (--variant-entry names), measured exactly as the main
                           one, pass by pass beside it in the same run (e.g. the build before a change)
  --p6-memory-limit Q      the memory limit P6's function processes run under, in a cgroup of their
                           own (a quantity such as 256Mi, or none); default: the Knative Service's
                           limits.memory (infra/knative/service.yaml) where this machine allows
                           (cgroup v1 memory controller, writable: root), else none
  --p7-routes a,b,c        L34Routes in the Gateway's namespace (default 0,1000,5000; quick 0,50)
  --p7-samples N           no-op reconciles per route count (default 30; quick 5)
  --p9-sizes a,b           Gateways for \`kubectl meridio status -A\` (default 1000; quick 20)
  --p9-repeats N           runs of the plugin per size (default 3; quick 1)
  --p10-sizes a,b          Gateways whose LB Deployments all roll after a template change
                           (default 1000,10000; quick 20)
  --p10-budgets a,b        LB_ROLLOUT_BUDGET of each drain, every size (default 1,50; quick 1,5)
  --p10-deadline M         minutes one drain may run; past it the row is of the prefix that
                           rolled (default 60; quick 10)
  --controller-manager     also run kube-controller-manager (Deployment status, ReplicaSets, Pods);
                           without it P10 starts a control plane of its own that has it
  --variant-entry name=path  an extra build of the function to measure (e.g. a patched copy;
                           a .blob is started with --snapshot-blob)
  --variant-env name:K=V   extra environment for a --variant-entry build (e.g. NODE_OPTIONS)
  --main-variant name      the build P2, P3, P4 and P6 run (default shipped)
  --out FILE               results JSON (default bench/results/<date>.json; quick: <date>-quick.json)
  --report FILE            markdown report (default bench/REPORT.md; quick: none, printed)
  --explore-report FILE    with --explore: the exploration's report (default bench/EXPLORE.md;
                           quick: none, printed)
  --render FILE            only re-render the reports from a results JSON (with bench/FINDINGS.md;
                           bench/EXPLORE.md too when the run explored)

CPU profiles (exploration, not part of any bench run): after a build (npm run bench builds
dist/), node dist/bench/explore/profile.js [--variant shipped] profiles startup and warm
no-op reconciles by package; writes bench/results/explore/profile-<date>-<variant>.json.
`;

function ints(s: string): number[] {
  const v = s.split(',').map((x) => Number(x.trim()));
  if (v.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`not a list of positive integers: ${s}`);
  return v;
}

function int(s: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a non-negative integer: ${s}`);
  return n;
}

interface Outputs {
  out: string | undefined;
  report: string | undefined;
  exploreReport: string | undefined;
  render: string | undefined;
}

function parseOptions(argv: string[]): { options: BenchOptions } & Outputs {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean' },
      quick: { type: 'boolean' },
      explore: { type: 'boolean' },
      only: { type: 'string' },
      'p1-spawns': { type: 'string' },
      'p1-variants': { type: 'string' },
      'p1-imports': { type: 'string' },
      'p2-samples': { type: 'string' },
      'p2-change-samples': { type: 'string' },
      'p3-repeats': { type: 'string' },
      'p4-sizes': { type: 'string' },
      'p4-repeats': { type: 'string' },
      'p5-concurrency': { type: 'string' },
      'p5-repeats': { type: 'string' },
      'p5-variants': { type: 'string' },
      'p6-sizes': { type: 'string' },
      'p6-passes': { type: 'string' },
      'p6-before': { type: 'string' },
      'p6-compare': { type: 'string' },
      'p6-memory-limit': { type: 'string' },
      'p7-routes': { type: 'string' },
      'p7-samples': { type: 'string' },
      'p9-sizes': { type: 'string' },
      'p9-repeats': { type: 'string' },
      'p10-sizes': { type: 'string' },
      'p10-budgets': { type: 'string' },
      'p10-deadline': { type: 'string' },
      'controller-manager': { type: 'boolean' },
      'variant-entry': { type: 'string', multiple: true },
      'variant-env': { type: 'string', multiple: true },
      'main-variant': { type: 'string' },
      out: { type: 'string' },
      report: { type: 'string' },
      'explore-report': { type: 'string' },
      render: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const o = defaultOptions(values.quick === true, values.explore === true);
  if (values.only !== undefined) {
    const only = values.only.split(',').map((s) => s.trim().toUpperCase());
    for (const f of only) if (!(FIGURES as readonly string[]).includes(f)) throw new Error(`unknown figure ${f}`);
    o.only = only as Figure[];
  }
  if (values['p1-spawns'] !== undefined) o.p1Spawns = int(values['p1-spawns']);
  if (values['p1-variants'] !== undefined) o.p1Variants = parseVariantList(values['p1-variants']);
  if (values['p1-imports'] !== undefined) o.p1ImportRepeats = int(values['p1-imports']);
  if (values['p2-samples'] !== undefined) o.p2Samples = int(values['p2-samples']);
  if (values['p2-change-samples'] !== undefined) o.p2ChangeSamples = int(values['p2-change-samples']);
  if (values['p3-repeats'] !== undefined) o.p3Repeats = int(values['p3-repeats']);
  if (values['p4-sizes'] !== undefined) o.p4Sizes = ints(values['p4-sizes']);
  if (values['p4-repeats'] !== undefined) o.p4Repeats = int(values['p4-repeats']);
  if (values['p5-concurrency'] !== undefined) o.p5Concurrency = int(values['p5-concurrency']);
  if (values['p5-repeats'] !== undefined) o.p5Repeats = int(values['p5-repeats']);
  if (values['p5-variants'] !== undefined) o.p5Variants = parseVariantList(values['p5-variants']);
  if (values['p6-sizes'] !== undefined) o.p6Sizes = ints(values['p6-sizes']);
  if (values['p6-passes'] !== undefined) o.p6Passes = int(values['p6-passes']);
  if (values['p6-before'] !== undefined) o.p6Before = values['p6-before'];
  if (values['p6-compare'] !== undefined) o.p6Compare = parseVariantList(values['p6-compare']);
  if (values['p6-memory-limit'] !== undefined) o.p6MemoryLimit = values['p6-memory-limit'] === 'none' ? null : values['p6-memory-limit'];
  if (values['p7-routes'] !== undefined) o.p7Routes = values['p7-routes'].split(',').map((x) => int(x.trim()));
  if (values['p7-samples'] !== undefined) o.p7Samples = int(values['p7-samples']);
  if (values['p9-sizes'] !== undefined) o.p9Sizes = values['p9-sizes'].split(',').map((x) => int(x.trim()));
  if (values['p9-repeats'] !== undefined) o.p9Repeats = int(values['p9-repeats']);
  if (values['p10-sizes'] !== undefined) o.p10Sizes = ints(values['p10-sizes']);
  if (values['p10-budgets'] !== undefined) o.p10Budgets = ints(values['p10-budgets']);
  if (values['p10-deadline'] !== undefined) o.p10DeadlineMinutes = int(values['p10-deadline']);
  if (values['controller-manager']) o.controllerManager = true;
  for (const spec of values['variant-entry'] ?? []) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new Error(`--variant-entry wants name=path, got ${spec}`);
    o.customVariants[spec.slice(0, eq)] = spec.slice(eq + 1);
  }
  for (const spec of values['variant-env'] ?? []) {
    const m = /^([^:]+):([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(spec);
    if (!m) throw new Error(`--variant-env wants name:KEY=VALUE, got ${spec}`);
    const [, name = '', key = '', value = ''] = m;
    o.customEnv[name] = { ...(o.customEnv[name] ?? {}), [key]: value };
  }
  if (values['main-variant'] !== undefined) o.mainVariant = values['main-variant'];
  checkVariants(o);
  return { options: o, out: values.out, report: values.report, exploreReport: values['explore-report'], render: values.render };
}

/** Fails before the control plane starts when a variant is neither shipped, nor given with --variant-entry, nor (with --explore) an exploratory build. */
function checkVariants(o: BenchOptions): void {
  const known = (name: string): boolean => name === 'shipped' || name === SENDER_AUTH_VARIANT.name || name === TELEMETRY_VARIANT || name in o.customVariants || (o.explore && (EXPLORATORY_BUILDS as readonly string[]).includes(name));
  for (const name of new Set([...o.p1Variants, ...o.p5Variants, o.mainVariant])) {
    if (known(name) || (name.endsWith('-cache') && known(name.slice(0, -'-cache'.length)))) continue;
    const exploratory = (EXPLORATORY_BUILDS as readonly string[]).includes(name.replace(/-cache$/, ''));
    throw new Error(exploratory ? `variant ${name} is an exploratory build: add --explore` : `unknown variant ${name} (see --help)`);
  }
}

/** P8, measured by the Serving end-to-end test (bench/report.ts, ServingWakeSchema). */
function servingWake(): ServingWake | undefined {
  const path = repoPath('bench', 'results', 'serving-wake.json');
  return existsSync(path) ? ServingWakeSchema.parse(JSON.parse(readFileSync(path, 'utf8'))) : undefined;
}

function findings(): string {
  const path = repoPath('bench', 'FINDINGS.md');
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** The image's size and contents, measured by tools/image/measure.mts (bench/report.ts, ImageFactsSchema). */
function imageFacts(): ImageFacts | undefined {
  const path = repoPath('bench', 'results', 'image.json');
  return existsSync(path) ? ImageFactsSchema.parse(JSON.parse(readFileSync(path, 'utf8'))) : undefined;
}

/** Writes REPORT.md (and EXPLORE.md when the run explored) where asked, or by default for a full run; prints them otherwise. */
function writeReports(results: BenchResults, paths: Pick<Outputs, 'report' | 'exploreReport'>, defaults: boolean): string[] {
  const full = results.mode === 'full';
  const docs = [{ md: renderReport(results, full ? findings() : '', servingWake(), imageFacts()), path: paths.report ?? (defaults ? repoPath('bench', 'REPORT.md') : undefined) }];
  if (explored(results)) docs.push({ md: renderExplore(results), path: paths.exploreReport ?? (defaults ? repoPath('bench', 'EXPLORE.md') : undefined) });
  const written: string[] = [];
  for (const { md, path } of docs) {
    if (path === undefined) {
      process.stdout.write(md);
      continue;
    }
    writeFileSync(path, md);
    written.push(path);
  }
  return written;
}

async function main(): Promise<void> {
  const { options, out, report, exploreReport, render } = parseOptions(process.argv.slice(2));
  if (render !== undefined) {
    // Re-renders the reports from a results file (e.g. after editing bench/FINDINGS.md).
    const results = JSON.parse(readFileSync(render, 'utf8')) as BenchResults;
    writeReports(results, { report, exploreReport }, false);
    return;
  }
  const t0 = performance.now();
  const log = (msg: string): void => {
    process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${msg}\n`);
  };
  const startedAt = new Date().toISOString();
  const machine = describeMachine();
  log(`${options.quick ? 'quick' : 'full'} run on ${machine.cpus} CPUs, node ${machine.node}, load ${machine.loadStart}`);
  const cpStart = performance.now();
  const cp = await ControlPlane.start({ controllerManager: options.controllerManager, controllerManagerArgs: CONTROLLER_MANAGER_SCALE_ARGS, log: (m) => log(`controlplane: ${m}`) });
  const cpMs = Math.round(performance.now() - cpStart);
  let ctx: BenchContext | undefined;
  const results: BenchResults = {
    schema: 1,
    startedAt,
    mode: options.quick ? 'quick' : 'full',
    options,
    machine,
    controlPlane: { versions: cp.info.versions, controllerManager: options.controllerManager, startMs: cpMs },
    durations: {},
    errors: {},
  };
  try {
    const cluster = connect(cp.info, { controllerManager: options.controllerManager });
    ctx = await setUp(cluster, log);
    await runFigures(ctx, options, results);
  } finally {
    if (ctx) await tearDown(ctx, { namespaces: false }).catch(() => undefined);
    await cp.stop();
    log('control plane stopped');
  }
  results.finishedAt = new Date().toISOString();
  // No machine paths in the results file: custom entries are named, not located.
  results.options = { ...results.options, customVariants: Object.fromEntries(Object.keys(options.customVariants).map((k) => [k, '(a path given with --variant-entry)'])) };
  results.machine = endLoad(results.machine);

  const date = startedAt.slice(0, 10);
  const outPath = out ?? repoPath('bench', 'results', `${date}${options.quick ? '-quick' : ''}.json`);
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(results, null, 2)}\n`);
  const written = writeReports(results, { report, exploreReport }, !options.quick);
  log(`results: ${outPath}${written.length > 0 ? `, reports: ${written.join(', ')}` : ''}; total ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (Object.keys(results.errors).length > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
