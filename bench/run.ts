// `npm run bench [-- options]`: starts its own control plane, sets up the
// controller identity, runs P1–P6 against the real function process, and
// writes bench/results/<date>.json and bench/REPORT.md. See --help.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ControlPlane } from '../tools/controlplane/control-plane.js';
import { connect } from './lib/cluster.js';
import type { BenchContext } from './lib/context.js';
import { describeMachine, endLoad } from './lib/machine.js';
import { repoPath } from './lib/repo.js';
import { setUp, tearDown } from './lib/setup.js';
import { parseVariantList } from './lib/variants.js';
import { renderReport } from './report.js';
import { FIGURES, defaultOptions, runFigures, type BenchOptions, type BenchResults, type Figure } from './suite.js';

const HELP = `Usage: npm run bench -- [options]

  --quick                  small sizes, a smoke test (well under a minute)
  --only P1,P3             run only these figures (default: all)
  --p1-spawns N            cold starts per variant (default 20; quick 3)
  --p1-variants a,b        shipped (the startup snapshot dist/function.blob, as the image
                           runs it), snapshot-with-code-cache, snapshot-default-heap (no
                           NODE_OPTIONS), shipped-own-template (TEMPLATE_PATH not the
                           default), shipped-sender-auth (SENDER_AUTH=required, posts with a
                           token), tsc, bundle, bundle-min, bundle-min-semi1 (+ NODE_OPTIONS=
                           --max-semi-space-size=1), any --variant-entry name, and any
                           script variant + "-cache" (NODE_COMPILE_CACHE, primed first)
                           (default shipped,snapshot-with-code-cache,snapshot-default-heap,
                           shipped-own-template,shipped-sender-auth,bundle-min-semi1-cache,bundle-min-cache,
                           bundle-min,tsc-cache,tsc; quick shipped)
  --p1-imports N           import-cost repeats per dependency (default 5; quick 0)
  --p2-samples N           no-op / bare GET samples (default 200; quick 20)
  --p2-change-samples N    configuration-change samples (default 50; quick 5)
  --p3-repeats N           repeats of every request-count scenario (default 3; quick 1)
  --p4-sizes a,b,c         Gateways sharing one configuration (default 10,100,500; quick 10)
  --p4-repeats N           edits per size (default 3; quick 1)
  --p5-concurrency N       concurrent events for the peak (default 100; quick 20)
  --p5-repeats N           fresh processes per variant (default 3; quick 1)
  --p5-variants a,b        (default shipped,snapshot-with-code-cache,snapshot-default-heap,
                           bundle-min-semi1-cache,tsc; quick shipped)
  --p6-sizes a,b,c         Gateways per resync pass (default 100,500,1000; quick 10,20,40)
  --p6-passes N            passes per size (default 3; quick 1)
  --controller-manager     also run kube-controller-manager (Deployment status, ReplicaSets, Pods)
  --variant-entry name=path  an extra build of the function to measure (e.g. a patched copy;
                           a .blob is started with --snapshot-blob)
  --variant-env name:K=V   extra environment for a --variant-entry build (e.g. NODE_OPTIONS)
  --main-variant name      the build P2, P3, P4 and P6 run (default shipped)
  --out FILE               results JSON (default bench/results/<date>.json; quick: <date>-quick.json)
  --report FILE            markdown report (default bench/REPORT.md; quick: none, printed)
  --render FILE            only re-render the report from a results JSON (with bench/FINDINGS.md)
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

function parseOptions(argv: string[]): { options: BenchOptions; out: string | undefined; report: string | undefined; render: string | undefined } {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean' },
      quick: { type: 'boolean' },
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
      'controller-manager': { type: 'boolean' },
      'variant-entry': { type: 'string', multiple: true },
      'variant-env': { type: 'string', multiple: true },
      'main-variant': { type: 'string' },
      out: { type: 'string' },
      report: { type: 'string' },
      render: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const o = defaultOptions(values.quick === true);
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
  return { options: o, out: values.out, report: values.report, render: values.render };
}

function findings(): string {
  const path = repoPath('bench', 'FINDINGS.md');
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

async function main(): Promise<void> {
  const { options, out, report, render } = parseOptions(process.argv.slice(2));
  if (render !== undefined) {
    // Re-renders a report from a results file (e.g. after editing bench/FINDINGS.md).
    const results = JSON.parse(readFileSync(render, 'utf8')) as BenchResults;
    const md = renderReport(results, results.mode === 'full' ? findings() : '');
    if (report) writeFileSync(report, md);
    else process.stdout.write(md);
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
  const cp = await ControlPlane.start({ controllerManager: options.controllerManager, log: (m) => log(`controlplane: ${m}`) });
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
  const md = renderReport(results, options.quick ? '' : findings());
  const reportPath = report ?? (options.quick ? undefined : repoPath('bench', 'REPORT.md'));
  if (reportPath) writeFileSync(reportPath, md);
  else process.stdout.write(md);
  log(`results: ${outPath}${reportPath ? `, report: ${reportPath}` : ''}; total ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (Object.keys(results.errors).length > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
