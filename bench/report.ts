import { z } from 'zod';
import { writesTo, type RequestCounts } from './lib/context.js';
import type { LimitFigures, P6Build } from './measures/resync.js';
import { recordedMeridio2Noops, type RecordedNoop } from './lib/meridio2-recorded.js';
import type { Summary } from './lib/stats.js';
import { SENDER_AUTH_VARIANT, TELEMETRY_VARIANT } from './lib/variants.js';
import { shippedResync } from '../tools/monitoring/resync-schedule.mjs';
import type { P1Variant } from './measures/cold-start.js';
import type { P5Variant } from './measures/memory.js';
import type { BenchResults } from './suite.js';
import type { P10Result, P10Row } from './measures/drain.js';

// Renders the results document as bench/REPORT.md: the targets table first,
// then every figure with how it was measured.

export function p9Section(p9: NonNullable<BenchResults['p9']>): string[] {
  const L = ['## P9 `kubectl meridio status -A`', '', 'How: n Gateways in sync, each with its LB Deployment (converged by the function\'s resync); the plugin\'s built entry (`node dist/cli/kubectl-meridio/main.js status -A`) run as its own process by an identity bound to the shipped read-only role only; its requests by verb from the audit log; spawn → exit. The lists are paged, 500 a page.', ''];
  L.push('| Gateways | rows printed | requests (allowed) | writes | spawn → exit |', '|---|---|---|---|---|');
  for (const row of p9.rows) L.push(`| ${row.n} | ${row.rows} | ${row.counts.total} (${row.allowance}): ${verbs(row.counts)} | ${row.counts.writes} | ${sumMs(row.ms)} |`);
  L.push('');
  return L;
}

const perGateway = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

/** Requests per Gateway rolled between checkpoints about a quarter of the drain apart: flat when each rollout costs the same, late or early. */
function increments(row: P10Row): string {
  const out: string[] = [];
  let prev = { rolled: 0, requests: 0 };
  for (const p of row.progress) {
    const last = p === row.progress[row.progress.length - 1];
    if (p.rolled <= prev.rolled || (!last && p.rolled - prev.rolled < row.rolled / 4)) continue;
    out.push(`${prev.rolled}→${p.rolled}: ${perGateway((p.requests - prev.requests) / (p.rolled - prev.rolled))}`);
    prev = p;
  }
  return out.join(', ') || '–';
}

/** The drain is linear when the ratio of the largest to the smallest size stays near their ratio (quadratic would be its square). */
export function p10Linear(p10: P10Result): boolean {
  return p10.slopes.every((s) => s.ratio <= 1.5 * (s.to / s.from));
}

export function p10Section(p10: P10Result): string[] {
  const L = ['## P10 the rollout budget\'s drain', '', 'How (bench/measures/drain.ts): n Gateways in one namespace, in sync under `LB_ROLLOUT_BUDGET=k`, each LB Deployment stored at 0 replicas (a MutatingAdmissionPolicy at create; `enforceReplicas: false` keeps it so), so that the real kube-controller-manager\'s Deployment controller completes each rollout at once without Pods. Then a template change: a new function process whose `TEMPLATE_PATH` has another LB image, as a new Revision starts, with the shipped event path in front of it: the local stand-in for the ApiServerSource (every change of the watched objects, LB Deployments included, one delivery at a time per stream) and the PingSource (a resync at start, then every 5 minutes, the measured rate, against the shipped `' + shippedResync().schedule + '`: an upper bound on the resyncs a drain meets), K_SINK the function itself. Drained = every LB Deployment\'s pod template has the new image and the Deployment controller says that rollout completed (judged from a watch of the Deployments), and then the function quiet for 5 s; a drain cut by its deadline stops at once, and its figures are those of the Deployments rolled by then. Requests: every request of the controller identity from the process\'s start to its stop, from the audit log. A census is one `rolling` list and one `line` list of LB Deployments (label-selected by the rollout index, docs/design.md §12).', ''];
  L.push('| n | budget k | rolled | requests | per Gateway | censuses (lists: rolling / line / configuration line) | most rolling at once | events handled | per Gateway between checkpoints | rolled / quiet after | load |', '|---|---|---|---|---|---|---|---|---|---|---|');
  for (const row of p10.rows) {
    const d = row.deploymentLists;
    const ev = Object.entries(row.events).map(([k, v]) => `${v} ${k.replace(/^dev\.knative\.|^org\.nordix\.meridio2\./, '')}`).join(', ');
    L.push(`| ${row.n} | ${row.budget} | ${row.rolled}${row.complete ? '' : ` (prefix: deadline reached)`} | ${row.counts.total}: ${verbs(row.counts)} | ${perGateway(row.requestsPerGateway)} | ${d.rolling} / ${d.line} / ${d['configuration line']} (${perGateway(d.rolling / Math.max(1, row.rolled))} per Gateway) | ${row.maxRolling} | ${ev} | ${increments(row)} | ${(row.rolledMs / 1000).toFixed(0)} s / ${(row.quietMs / 1000).toFixed(0)} s | ${row.load} |`);
  }
  L.push('');
  if (p10.slopes.length > 0) {
    L.push('| budget k | sizes | requests per extra Gateway | requests(large) / requests(small) | linear would be | quadratic would be |', '|---|---|---|---|---|---|');
    for (const s of p10.slopes) L.push(`| ${s.budget} | ${s.from} → ${s.to} | ${perGateway(s.perExtraGateway)} | ${s.ratio.toFixed(2)} | ${(s.to / s.from).toFixed(0)} | ${((s.to / s.from) ** 2).toFixed(0)} |`);
    L.push('');
  }
  const se = p10.statusEvent;
  if (se) {
    L.push(`A settled Deployment's status event, alone (n=${se.n}, budget 1; K_SINK a Broker stand-in that keeps the fan-out, so only the event's own invocation is counted): the event of an LB Deployment whose rollout completed while its index label still said \`rolling\`: ${se.settled.counts.total} requests (${verbs(se.settled.counts)}), ${se.settled.deploymentLists / 2} census, ${se.settled.targets} reconcile requests handed over (its owner, which takes the label back, and the next in line); the next status event of the same Deployment, its label back: ${se.again.counts.total} requests (${verbs(se.again.counts)}), ${se.again.deploymentLists / 2} census.`);
    L.push('');
  }
  return L;
}

export interface TargetRow {
  figure: string;
  target: string;
  measured: string;
  met: boolean | null;
  note: string;
}

export const ms = (x: number): string => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(1) : Math.round(x)} ms` : 'n/a');
export const mb = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(1)} MB` : 'n/a');
export const sumMs = (s: Summary): string => `${ms(s.median)} (p99 ${ms(s.p99)}, n=${s.n})`;
export const sumMb = (s: Summary): string => `${mb(s.median)} (max ${mb(s.max)}, n=${s.n})`;
const verbs = (c: RequestCounts): string => Object.entries(c.byVerb).map(([k, v]) => `${v}× ${k}`).join(', ') || 'none';
const mark = (m: boolean | null): string => (m === null ? '–' : m ? '✅ met' : '❌ missed');


/** Meridio-2's recorded no-op events, which must agree with each other to be quoted as one figure. */
export function meridio2Noop(recorded: RecordedNoop[]): { writes: number; reads: number; total: number; verbs: string; watches: number; lease: number; where: string } {
  const first = recorded[0];
  if (!first) throw new Error('no recorded Meridio-2 no-op event');
  const verbsOf = (r: RecordedNoop): string => Object.entries(r.counts).map(([k, v]) => `${v}× ${k}`).join(', ') || 'none';
  for (const r of recorded) {
    if (verbsOf(r) !== verbsOf(first)) throw new Error(`recorded Meridio-2 no-op events differ: ${first.case}/${first.step} ${verbsOf(first)} vs ${r.case}/${r.step} ${verbsOf(r)}`);
  }
  const reads = Object.entries(first.counts).filter(([k]) => /^(get|list) /.test(k)).reduce((n, [, v]) => n + v, 0);
  return { writes: first.writes, reads, total: first.total, verbs: verbsOf(first), watches: first.watches, lease: first.leaseRequests, where: recorded.map((r) => `${r.case}/${r.step}`).join(', ') };
}

/** The shipped build's row first, the other builds after it as variants, in the order they ran. */
export function shippedFirst<T extends { variant: string }>(rows: readonly T[]): T[] {
  return [...rows.filter((v) => v.variant === 'shipped'), ...rows.filter((v) => v.variant !== 'shipped')];
}

const P1_HOW = 'How: each build started as its variant says (the shipped one exactly as the image starts it: `node --snapshot-blob dist/function.blob` with the image\'s NODE_OPTIONS), spawned with the production environment (KUBECONFIG with a ServiceAccount token, PORT, K_SINK, TEMPLATE_PATH, WATCH_NAMESPACES, LOG_LEVEL=info) and a clean environment otherwise. *Ready*: spawn() until `GET /readyz` first answers 200, polled every 2 ms on fresh connections. *First reconcile*: spawn() until the first reconcile request, posted the moment /readyz answered (as the Knative activator forwards the request it held), is answered 2xx with outcome `applied`; each spawn reconciles a fresh Gateway, so the first reconcile reads 5 objects, creates the Deployment, writes the status and records an Event.';
const P1_HOW_CPU = ' *CPU to ready*: the CPU time all of the process\'s threads had used when it was ready (/proc schedstat), less moved than wall-clock time when other work shares the machine.';
const P1_HOW_VARIANTS = ' Variants run interleaved, round by round. Compile caches (`NODE_COMPILE_CACHE`) are primed by one run that serves a reconcile and exits, as an image build step would. The shipped build is listed first; the others are variants.';

export function p1Section(rows: readonly P1Variant[]): string[] {
  const L = [`${P1_HOW}${P1_HOW_CPU}${rows.length > 1 ? P1_HOW_VARIANTS : ''}`, '', '| variant | entry | spawn → ready | CPU to ready | spawn → first reconcile | ready → first answered | RSS after first | entry size | compile cache |', '|---|---|---|---|---|---|---|---|---|'];
  for (const v of shippedFirst(rows)) {
    L.push(`| ${v.variant} | ${v.describe} | ${sumMs(v.ready)} | ${v.cpuToReadyMs ? sumMs(v.cpuToReadyMs) : '–'} | ${sumMs(v.firstReconcile)} | ${ms(v.firstEvent.median)} | ${mb(v.rssAfterFirstMb.median)} | ${v.entryBytes > 100 * 1024 ? `${(v.entryBytes / 1024).toFixed(0)} KB` : '(module graph)'} | ${v.compileCacheBytes !== undefined ? `${(v.compileCacheBytes / 1024).toFixed(0)} KB` : '–'} |`);
  }
  const paired = rows.filter((v) => v.pairedDifference);
  if (paired.length > 0) {
    L.push('', `Paired with \`${rows[0]?.variant ?? ''}\`, spawn by spawn within each round (median of the differences, and their range):`);
    for (const v of paired) {
      const d = v.pairedDifference as NonNullable<P1Variant['pairedDifference']>;
      const signed = (x: number): string => `${x >= 0 ? '+' : ''}${ms(x)}`;
      L.push(`- ${v.variant}: spawn → ready ${signed(d.ready.median)} (${signed(d.ready.min)} to ${signed(d.ready.max)}), spawn → first reconcile ${signed(d.firstReconcile.median)} (${signed(d.firstReconcile.min)} to ${signed(d.firstReconcile.max)}), n=${d.ready.n}`);
    }
  }
  return L;
}

export function p5Section(concurrency: number, rows: readonly P5Variant[]): string[] {
  const L = [`How: from \`/proc/<pid>/status\` of the function process. *Idle*: VmRSS 2 s after /readyz first answered 200, before any event. *Peak*: VmHWM (high-water mark of the resident set over the process's life) after ${concurrency} reconcile requests posted at once on ${concurrency} connections, one per Gateway, each of which writes (the shared GatewayConfiguration was edited just before). *After*: VmRSS 2 s after the burst. A fresh process per repeat.`, '', '| variant | idle RSS | peak (VmHWM) | RSS after | burst posted → all answered | outcomes |', '|---|---|---|---|---|---|'];
  for (const v of shippedFirst(rows)) L.push(`| ${v.variant} | ${sumMb(v.idleMb)} | ${sumMb(v.peakMb)} | ${sumMb(v.afterMb)} | ${sumMs(v.burstMs)} | ${Object.entries(v.outcomes).map(([k, n]) => `${k} ${n}`).join(', ')} |`);
  return L;
}

/** Builds only `--explore` measures (bench/explore/builds.ts): their rows go to bench/EXPLORE.md. */
export function exploratory(r: BenchResults, variant: string): boolean {
  return variant !== 'shipped' && variant !== SENDER_AUTH_VARIANT.name && variant !== TELEMETRY_VARIANT && variant !== r.options.mainVariant && !(variant in r.options.customVariants);
}

/** Whether the run measured anything for bench/EXPLORE.md. */
export function explored(r: BenchResults): boolean {
  return [...(r.p1?.variants ?? []), ...(r.p5?.variants ?? [])].some((v) => exploratory(r, v.variant)) || (r.p1?.imports ?? []).length > 0 || (r.p1?.snapshotFloors ?? []).length > 0;
}

export function targets(r: BenchResults): TargetRow[] {
  const rows: TargetRow[] = [];
  const p1 = (r.p1?.variants ?? []).filter((v) => !exploratory(r, v.variant));
  const shipped = p1.find((v) => v.variant === 'shipped');
  const best = [...p1].sort((a, b) => a.firstReconcile.median - b.firstReconcile.median)[0];
  const other = best && best.variant !== 'shipped' ? `; best build (${best.variant}): ` : '';
  if (shipped || best) {
    const s = shipped ?? best;
    if (s) {
      rows.push({ figure: 'P1 spawn → ready', target: '≤ 150 ms median', measured: ms(s.ready.median), met: s.ready.median <= 150, note: `${s.variant}${other}${other && best ? ms(best.ready.median) : ''}` });
      rows.push({ figure: 'P1 spawn → first reconcile', target: '≤ 300 ms median', measured: ms(s.firstReconcile.median), met: s.firstReconcile.median <= 300, note: `${s.variant}${other}${other && best ? ms(best.firstReconcile.median) : ''}` });
    }
  }
  if (r.p2) rows.push({ figure: 'P2 no-op ÷ bare GET', target: '≤ 2', measured: r.p2.ratio.toFixed(2), met: r.p2.ratio <= 2, note: `no-op ${ms(r.p2.noop.median)} with the observe hint (${ms(r.p2.noopWithoutHint.median)} without, ratio ${r.p2.ratioWithoutHint.toFixed(2)}); its five reads in parallel from the bench ${ms(r.p2.bareRound.median)} (no-op ÷ that ${r.p2.ratioRound.toFixed(2)}); bare GET ${ms(r.p2.bareGet.median)} on an open connection (${ms(r.p2.bareGetMakeApiClient.median)} through makeApiClient, ratio ${r.p2.ratioMakeApiClient.toFixed(2)})` });
  const p3 = (name: string) => r.p3?.rows.find((x) => x.scenario === name);
  const noop = p3('no-op');
  if (noop) rows.push({ figure: 'P3 no-op', target: '0 writes', measured: `${noop.counts.writes} writes, ${noop.counts.reads} reads`, met: noop.counts.writes === 0, note: verbs(noop.counts) });
  const recorded = recordedMeridio2Noops();
  if (noop && recorded.length > 0) {
    const m = meridio2Noop(recorded);
    rows.push({ figure: 'P3 no-op, beside Meridio-2 (recorded)', target: 'fewer writes than Meridio-2', measured: `${noop.counts.writes} writes, ${noop.counts.reads} reads; Meridio-2: ${m.writes} write, ${m.reads} reads`, met: noop.counts.writes < m.writes, note: `Meridio-2 ${m.verbs} per no-op event (${m.where}), reading from the cache of ${m.watches} watches held open; see "Beside Meridio-2" under P3` });
  }
  const mutatedNoop = p3('no-op under mutating admission');
  if (mutatedNoop) rows.push({ figure: 'P3 no-op, mutating admission', target: '0 writes', measured: `${mutatedNoop.counts.writes} writes, ${mutatedNoop.counts.reads} reads`, met: mutatedNoop.counts.writes === 0, note: `images rewritten and a Pod annotation added by MutatingAdmissionPolicies; ${verbs(mutatedNoop.counts)}` });
  const change = p3('configuration change');
  if (change) {
    const d = writesTo(change.counts, 'deployments');
    const s = writesTo(change.counts, 'gateways/status');
    const ev = writesTo(change.counts, 'events');
    rows.push({
      figure: 'P3 configuration change',
      target: '1 Deployment write + 1 status write',
      measured: `${d} Deployment + ${s} status${ev > 0 ? ` (+ ${ev} Event)` : ''}`,
      met: d === 1 && s === 1,
      note: ev > 0 ? 'the Event is the Normal GatewayConfigurationApplied record of the change' : '',
    });
  }
  const p4 = r.p4?.sizes.find((s) => s.n === 100) ?? r.p4?.sizes[r.p4.sizes.length - 1];
  if (p4) {
    const at100 = p4.n === 100;
    const classLists = p4.counts.byVerb['list gatewayclasses'] ?? 0;
    rows.push({ figure: `P4 ${p4.n} Gateways`, target: at100 ? '≤ 1.5 s quiet' : '≤ 1.5 s quiet (at n = 100)', measured: ms(p4.convergedMs.median), met: at100 ? p4.convergedMs.median <= 1500 : null, note: `load ${p4.load ?? '–'}` });
    rows.push({
      figure: `P4 ${p4.n} Gateways, requests`,
      target: '≤ 6 per Gateway, 1 GatewayClass list per event',
      measured: `${p4.requestsPerGateway.toFixed(2)} per Gateway, ${classLists} GatewayClass list`,
      met: p4.requestsPerGateway <= 6 && classLists === 1,
      note: `${p4.counts.total} requests`,
    });
  }
  const p5rows = (r.p5?.variants ?? []).filter((v) => !exploratory(r, v.variant));
  const p5 = p5rows.find((v) => v.variant === 'shipped') ?? p5rows[0];
  const p5best = r.p5 ? [...p5rows].sort((a, b) => a.peakMb.median - b.peakMb.median)[0] : undefined;
  if (p5 && r.p5) {
    const alt = p5best && p5best.variant !== p5.variant ? `; ${p5best.variant}: ` : '';
    rows.push({ figure: 'P5 idle', target: '≤ 70 MB', measured: mb(p5.idleMb.median), met: p5.idleMb.median <= 70, note: `${p5.variant}${alt}${alt && p5best ? mb(p5best.idleMb.median) : ''}` });
    rows.push({ figure: `P5 ${r.p5.concurrency} concurrent`, target: '≤ 150 MB', measured: mb(p5.peakMb.median), met: r.p5.concurrency >= 100 ? p5.peakMb.median <= 150 : null, note: `peak VmHWM, ${p5.variant}${alt}${alt && p5best ? mb(p5best.peakMb.median) : ''}${r.p5.concurrency < 100 ? ' (quick mode: fewer than 100)' : ''}` });
  }
  if (r.p9) {
    rows.push({
      figure: 'P9 `kubectl meridio status -A`, requests',
      target: '≤ 8 + 2 per 500 Gateways, no write',
      measured: r.p9.rows.map((x) => `n=${x.n}: ${x.counts.total} (allowed ${x.allowance}), ${x.counts.writes} writes`).join('; '),
      met: r.p9.rows.every((x) => x.counts.total <= x.allowance && x.counts.writes === 0),
      note: r.p9.rows.map((x) => `n=${x.n}: ${x.rows} rows, ${ms(x.ms.median)} spawn → exit`).join('; '),
    });
  }
  if (r.p10) {
    const p10 = r.p10;
    const se = p10.statusEvent;
    rows.push({
      figure: 'P10 the rollout budget\'s drain, requests',
      target: `linear in n (requests(10n)/requests(n) ≈ 10, not ≈ 100), ≤ ${p10.allowancePerGateway} per rolled Gateway`,
      measured: [
        ...p10.rows.map((x) => `n=${x.n} k=${x.budget}: ${x.counts.total}${x.complete ? '' : ` (prefix, ${x.rolled} rolled)`}, ${perGateway(x.requestsPerGateway)} per Gateway`),
        ...p10.slopes.map((s) => `k=${s.budget}: ${perGateway(s.perExtraGateway)} per extra Gateway, ratio ${s.ratio.toFixed(2)}`),
      ].join('; '),
      met: p10.rows.length > 0 && p10Linear(p10) && p10.rows.every((x) => x.requestsPerGateway <= p10.allowancePerGateway) ? (p10.rows.every((x) => x.complete) ? true : null) : false,
      note: p10.rows.map((x) => `n=${x.n} k=${x.budget}: at most ${x.maxRolling} rolling at once`).join('; '),
    });
    if (se) {
      rows.push({
        figure: 'P10 a settled Deployment\'s status event',
        target: 'at most one census (2 lists)',
        measured: `settled, label rolling: ${se.settled.deploymentLists} Deployment lists (${se.settled.counts.total} requests); again: ${se.again.deploymentLists}`,
        met: se.settled.deploymentLists <= 2 && se.again.deploymentLists === 0,
        note: `n=${se.n}`,
      });
    }
  }
  if (r.p6) {
    const sizes = r.p6.sizes;
    rows.push({
      figure: 'P6 in-sync pass, requests',
      target: '≤ 10 + 1 per extra 500-object page, no write',
      measured: sizes.map((s) => `n=${s.n}: ${s.inSync.counts.total} (allowed ${s.requestAllowance}), ${s.inSync.counts.writes} writes`).join('; '),
      met: sizes.every((s) => s.inSync.counts.total <= s.requestAllowance && s.inSync.counts.writes === 0),
      note: sizes.map((s) => `n=${s.n}: ${s.before ? `before ${s.before.counts.total} requests, ` : ''}after ${s.inSync.counts.total}`).join('; '),
    });
    const big = sizes.find((s) => s.n === 10000);
    if (!big) rows.push({ figure: 'P6 in-sync pass, n = 10,000', target: '≤ 10 s, ≤ 256 MiB peak RSS', measured: 'not measured in this run', met: null, note: `sizes run: ${sizes.map((s) => s.n).join(', ')}` });
    if (big) {
      rows.push({
        figure: 'P6 in-sync pass, n = 10,000',
        target: '≤ 10 s, ≤ 256 MiB peak RSS',
        measured: `${ms(big.ms.median)}, ${mb(big.peakMb)}${big.memoryLimit ? ` under an enforced ${big.memoryLimit.limit} (cgroup peak ${mb(big.memoryLimit.peakMb)}, ${big.memoryLimit.oomKills > 0 ? 'killed' : 'never killed'})` : ''}`,
        met: big.ms.median <= 10000 && big.peakMb <= 256 * 1.048576 && (big.memoryLimit?.oomKills ?? 0) === 0,
        note: `every Gateway drifted: ${ms(big.allDrifted.ms)} to hand ${big.allDrifted.fannedOut} requests to the Broker stand-in, peak ${mb(big.allDrifted.peakMb)}${big.before ? `; before: ${ms(big.before.ms)}, answered ${big.before.status} (${big.before.outcome})` : ''}`,
      });
    }
    rows.push({
      figure: 'P6 d drifted among n',
      target: 'exactly d reconcile requests',
      measured: sizes.map((s) => `n=${s.n}: d=${s.drift.d} → ${s.drift.fannedOut}`).join('; '),
      met: sizes.every((s) => s.drift.exact),
      note: sizes.map((s) => `n=${s.n}: ${ms(s.drift.ms)}`).join(', '),
    });
    rows.push({
      figure: 'P6 every Gateway drifted',
      target: 'answered 2xx inside timeoutSeconds (60 s), no redelivery',
      measured: sizes.map((s) => `n=${s.n}: ${s.allDrifted.status} in ${ms(s.allDrifted.ms)}, ${s.allDrifted.fannedOut} of ${s.n} handed over (${s.allDrifted.outcome})`).join('; '),
      met: sizes.every((s) => s.allDrifted.status < 300 && s.allDrifted.ms < 60_000),
      note: 'a pass whose time runs out hands over what it can and leaves the rest to the next pass (docs/design.md §11)',
    });
  }
  return rows;
}

/**
 * The wake path and the idle cost with the real Knative Serving, measured
 * by test/e2e/serving.test.ts (the only harness that runs Serving), recorded
 * in bench/results/serving-wake.json (SERVING_WAKE_RESULTS).
 */
export const ServingWakeSchema = z.object({
  measuredAt: z.string(),
  window: z.string(),
  wake: z.object({ editToConverged: z.number(), editToDelivery: z.number(), deliveryToPodRunning: z.number(), podRunningToFunctionListening: z.number(), functionListeningToConverged: z.number(), deliveries: z.number(), deploymentWrites: z.number() }),
  warm: z.object({ editToConverged: z.number() }),
  ping: z.object({ podLifetime: z.number(), lastDeliveryToPodGone: z.number(), deliveriesWhileUp: z.number() }),
});
export type ServingWake = z.infer<typeof ServingWakeSchema>;

/** `resync`: the PingSource schedule the idle cost is stated for first (the shipped one). */
export function p8Section(w: ServingWake, resync = shippedResync()): string[] {
  const s = (x: number): string => `${(x / 1000).toFixed(1)} s`;
  const duty = (periodS: number): string => `${Math.min(100, (100 * w.ping.podLifetime) / 1000 / periodS).toFixed(1)}%`;
  return [
    '## P8 the wake path, with the real Knative Serving',
    '',
    `How: \`test/e2e/serving.test.ts\` (${w.measuredAt.slice(0, 10)}), one run: the real Serving controller, webhook, autoscaler, activator and queue-proxy, the real Eventing Broker and ApiServerSource adapter, KWOK placing the Pod and the process kubelet running its queue-proxy and function (docs/testing.md, "Knative Serving"). *From zero*: a GatewayConfiguration edited while the Revision has no Pod, until the Gateway reads back Applied naming the new generation; the breakdown from the cluster DNS proxy's record of the delivery to the function's address, the kubelet seeing the Pod running (KWOK reports it Ready at once: no image pull, no container start), the function's "listening" log line. *Warm*: the same edit while the Pod runs. *Idle cost*: one PingSource event wakes the Revision; the Pod's life from its processes starting to their stop, with the shipped \`autoscaling.knative.dev/window: "${w.window}"\`.`,
    '',
    '| path | edit → converged | edit → delivery at the activator | activator hold: delivery → Pod running | Pod running → function listening | listening → converged (queue-proxy, reconcile) | deliveries | Deployment writes |',
    '|---|---|---|---|---|---|---|---|',
    `| from zero | ${s(w.wake.editToConverged)} | ${s(w.wake.editToDelivery)} | ${s(w.wake.deliveryToPodRunning)} | ${s(w.wake.podRunningToFunctionListening)} | ${s(w.wake.functionListeningToConverged)} | ${w.wake.deliveries} | ${w.wake.deploymentWrites} |`,
    `| warm | ${s(w.warm.editToConverged)} | | | | | | 1 |`,
    '',
    `Idle cost: a Pod woken by one ping lives **${s(w.ping.podLifetime)}** (${s(w.ping.lastDeliveryToPodGone)} after the last request it served; ${w.ping.deliveriesWhileUp} request(s) while up). Idle duty cycle: ${duty(resync.seconds)} with the shipped \`${resync.schedule}\`; ${[300, 600, 900].filter((p) => p !== resync.seconds).map((p) => `${duty(p)} with \`*/${p / 60} * * * *\``).join(', ')}.`,
    '',
  ];
}

/**
 * The controller image's size and contents, measured with
 * tools/image/measure.mts (its compressed layers as buildah pushes them to an
 * OCI layout) and the image's SBOM (syft), in bench/results/image.json.
 */
export const ImageFactsSchema = z.object({
  measuredAt: z.string(),
  runtimeBase: z.string(),
  compressedBytes: z.number().int(),
  unpacked: z.string(),
  layers: z.number().int(),
  before: z.object({ runtimeBase: z.string(), compressedBytes: z.number().int(), unpacked: z.string(), layers: z.number().int() }),
  sbom: z.object({ deb: z.array(z.string()), npm: z.number().int(), node: z.string() }),
});
export type ImageFacts = z.infer<typeof ImageFactsSchema>;

/** The anchors' runtime bases (their Dockerfiles), beside which the report puts ours. */
const IMAGE_ANCHORS: ReadonlyArray<[string, string]> = [
  ['Envoy Gateway', 'distroless `base-nossl` (glibc, no OpenSSL), a Go binary'],
  ['Kong', 'distroless `static` (no libc), a Go binary'],
  ['NGINX Gateway Fabric (control plane)', '`scratch`, a Go binary'],
];

/** The image's row of the targets table (issue 41: ≤ 50 MB compressed, distroless-style). */
export function imageTarget(f: ImageFacts): TargetRow {
  return { figure: 'Image, compressed', target: '≤ 50 MB, no shell or package manager', measured: `${(f.compressedBytes / 1e6).toFixed(1)} MB`, met: f.compressedBytes <= 50e6, note: `${f.runtimeBase}; before ${(f.before.compressedBytes / 1e6).toFixed(1)} MB (${f.before.runtimeBase}); see "Image size"` };
}

export function imageSection(f: ImageFacts): string[] {
  const mb = (b: number): string => `${(b / 1e6).toFixed(1)} MB`;
  return [
    '## Image size',
    '',
    `How: (${f.measuredAt.slice(0, 10)}) the image built from the Dockerfile on the local \`node:24-slim\` stand-in (docs/testing.md, "The image"), its layers as \`buildah push\` compresses them (gzip) into an OCI layout, summed as \`node tools/image/measure.mts\` sums them (tools/image/buildah.mts, compressedSize): the bytes a node pulls. Contents as the release's SBOM (syft) lists them.`,
    '',
    '| build | runtime base | compressed (pulled) | unpacked | layers |',
    '|---|---|---|---|---|',
    `| this build | ${f.runtimeBase} | **${mb(f.compressedBytes)}** (${f.compressedBytes.toLocaleString('en-US')} bytes; target ≤ 50 MB) | ${f.unpacked} | ${f.layers} |`,
    `| before | ${f.before.runtimeBase} | ${mb(f.before.compressedBytes)} (${f.before.compressedBytes.toLocaleString('en-US')} bytes) | ${f.before.unpacked} | ${f.before.layers} |`,
    '',
    `SBOM: Node.js ${f.sbom.node} (the binary), ${f.sbom.npm} npm packages (bundled into the snapshot; their package.json and licence files in \`/app/node_modules\`), and the Debian packages of its files (the libraries the binary links, and base-files for \`/etc/os-release\`): ${f.sbom.deb.map((d) => `\`${d}\``).join(', ')}. No shell, no package manager.`,
    '',
    'Beside the anchors\' runtime bases (from their Dockerfiles; their image sizes are not measured here, as no container registry is reachable from this machine):',
    '',
    '| project | runtime base |',
    '|---|---|',
    ...IMAGE_ANCHORS.map(([p, b]) => `| ${p} | ${b} |`),
    `| this controller | ${f.runtimeBase} |`,
    '',
    'The Node.js binary is most of it: 108 MB stripped (126 MB as released, 18 MB of it symbols and DWARF), about 40 MB gzip-compressed; a Go controller on `static` or `scratch` needs none of it.',
    '',
  ];
}

export function renderReport(r: BenchResults, extra = '', wake?: ServingWake, image?: ImageFacts): string {
  const L: string[] = [];
  const m = r.machine;
  L.push('# Benchmarks: serverless Meridio-2 Gateway controller');
  L.push('');
  L.push(`Generated by \`npm run bench${r.mode === 'quick' ? ' -- --quick' : ''}\` (bench/run.ts) on ${r.startedAt.slice(0, 10)}; raw figures in \`bench/results/\`.`);
  L.push('Wall-clock figures come from a shared machine: read medians and ratios, and treat p99 as indicative. Request counts are exact.');
  L.push('');
  L.push('## Machine');
  L.push('');
  L.push(`- ${m.cpus} CPUs (${m.cpuModel}${m.hypervisor ? ', virtual machine' : ''}), ${m.memoryGb} GB memory, ${m.os} kernel ${m.kernel}`);
  L.push(`- Node.js ${m.node} (V8 ${m.v8})`);
  L.push(`- 1-minute load average: ${m.loadStart} at start, ${m.loadEnd ?? '?'} at end (other work shared the machine)`);
  L.push(`- Control plane: kube-apiserver ${r.controlPlane.versions.kubernetes}, etcd ${r.controlPlane.versions.etcd}, on loopback, started by the bench (${(r.controlPlane.startMs / 1000).toFixed(1)} s); kube-controller-manager ${r.controlPlane.controllerManager ? 'running' : 'not started (no ReplicaSets or Pods are created from the thousands of LB Deployments, so the API server serves the controller alone; `--controller-manager` turns it on)'}`);
  L.push(`- Function build for P2, P3, P4 and P6: \`${r.options.mainVariant}\`${r.options.mainVariant === 'shipped' ? ' (the shipped startup snapshot, `node --snapshot-blob dist/function.blob`)' : ''}; P1 and P5 ${explored(r) ? 'compare other builds too, in bench/EXPLORE.md' : 'run the builds named by --p1-variants and --p5-variants (default shipped, and shipped-telemetry: the same with OpenTelemetry export on)'}`);
  L.push(`- Audit log at Metadata level for every request, \`--audit-log-mode=blocking\` (it costs every request a little, the controller's and the bare GET alike)`);
  L.push('');
  L.push('## Targets');
  L.push('');
  L.push('| figure | target | measured (median) | where we stand | note |');
  L.push('|---|---|---|---|---|');
  for (const t of targets(r)) L.push(`| ${t.figure} | ${t.target} | ${t.measured} | ${mark(t.met)} | ${t.note} |`);
  if (image) {
    const t = imageTarget(image);
    L.push(`| ${t.figure} | ${t.target} | ${t.measured} | ${mark(t.met)} | ${t.note} |`);
  }
  L.push('');
  const errors = Object.entries(r.errors);
  if (errors.length > 0) {
    L.push('## Errors');
    L.push('');
    for (const [fig, e] of errors) L.push(`- ${fig}: \`${(e ?? '').split('\n')[0]}\``);
    L.push('');
  }

  if (r.p1) {
    L.push('## P1 cold start');
    L.push('');
    L.push(...p1Section(r.p1.variants.filter((v) => !exploratory(r, v.variant))));
    L.push('');
    const f = r.p1.floors;
    L.push(`Floors on this machine: \`node -e 0\` spawn → exit ${sumMs(f.nodeExitMs)}; a bare \`node:http\` server spawn → /readyz 200 ${sumMs(f.bareServerReadyMs)} at ${mb(f.bareServerRssMb.median)} RSS.`);
    if (explored(r)) L.push('', 'Other builds of the function measured in this run, and what each dependency costs alone (`npm run bench -- --explore`): [bench/EXPLORE.md](EXPLORE.md).');
    L.push('');
  }

  if (r.p2) {
    const p = r.p2;
    L.push('## P2 warm reconcile latency');
    L.push('');
    L.push(`How: one function process that has already served events; one Gateway in sync. *No-op*: a reconcile request posted → answered (HTTP keep-alive, binary-mode CloudEvent), ${p.samples} samples after warm-up. *Bare GET*: one \`CustomObjectsApi.getNamespacedCustomObject\` of the same Gateway from the bench process with the same client library, as the same ServiceAccount (token kubeconfig), interleaved 1:1 with the no-op samples; once with one connection pool (the function's own connectionPool, functions/kube/pooled-client.ts: the unavoidable round trip) and once through \`KubeConfig.makeApiClient()\`, which in client-node 2.0.1 opens a new connection with a full TLS handshake for every request. *Configuration change*: the GatewayConfiguration is edited (not timed), then a reconcile request posted → answered.`);
    L.push('');
    L.push('| measurement | median | p99 | min | max | n |');
    L.push('|---|---|---|---|---|---|');
    const row = (name: string, s: Summary): string => `| ${name} | ${ms(s.median)} | ${ms(s.p99)} | ${ms(s.min)} | ${ms(s.max)} | ${s.n} |`;
    L.push(row('no-op reconcile with the observe hint, as fan-out and the resync send it (posted → answered)', p.noop));
    L.push(row('no-op reconcile without a hint (posted → answered)', p.noopWithoutHint));
    L.push(row('no-op, inside the function (its durationMs log)', p.noopInFunction));
    L.push(row('bare GET, one connection pool (the floor)', p.bareGet));
    L.push(row('bare GET, KubeConfig.makeApiClient (new TLS connection per request)', p.bareGetMakeApiClient));
    L.push(row("the no-op's five reads in parallel, one connection pool (the floor of one read round)", p.bareRound));
    L.push(row('configuration change (posted → answered)', p.configurationChange));
    L.push(row('configuration change, inside the function', p.configurationChangeInFunction));
    L.push('');
    L.push(`Ratio no-op ÷ bare GET (medians): **${p.ratio.toFixed(2)}** against the pooled GET (the floor); ${p.ratioMakeApiClient.toFixed(2)} against the makeApiClient GET. With the hint the event carries (class, GatewayConfiguration, route scope), a no-op reconcile is one round of five parallel reads, so its floor is one round of five parallel requests (${ms(p.bareRound.median)} from the bench; no-op ÷ that ${p.ratioRound.toFixed(2)}: the rest is the HTTP hop, parsing and planning) rather than one GET; without a hint (e.g. a Deployment status event) it is two rounds (Gateway, Deployment and the namespace's L34Routes; then the GatewayClass and the GatewayConfiguration): ${p.ratioWithoutHint.toFixed(2)}. Outcomes: ${Object.entries(p.outcomes).map(([k, v]) => `${k} ×${v}`).join(', ')}.`);
    L.push('');
  }

  if (r.p3) {
    L.push('## P3 API requests per reconcile');
    L.push('');
    L.push('How: one reconcile request posted to the function process; the API server audit log (every request, Metadata level) is bracketed by barrier requests before and after, and only requests by the controller ServiceAccount are counted. The counts were taken in every repeat; "consistent" says they were identical each time.');
    L.push('');
    L.push('| scenario | outcome | reads | writes | by verb | consistent |');
    L.push('|---|---|---|---|---|---|');
    for (const x of r.p3.rows) L.push(`| ${x.scenario} | ${x.outcome} | ${x.counts.reads} | ${x.counts.writes} | ${verbs(x.counts)} | ${x.consistent ? `yes (${x.repeats})` : `NO (${x.repeats})`} |`);
    L.push('');
    L.push('"(first)" is the reconcile that reaches a new verdict (status and a Warning Event are written once); "(repeat)" is the same verdict observed again, which writes nothing.');
    L.push('');
    const recorded = recordedMeridio2Noops();
    const noop = r.p3.rows.find((x) => x.scenario === 'no-op');
    if (noop && recorded.length > 0) {
      const m = meridio2Noop(recorded);
      L.push('### Beside Meridio-2: requests per no-op event');
      L.push('');
      L.push(`How: the function's figure is the no-op row above (measured here). Meridio-2's is recorded from its own controller (Nordix/Meridio-2 f6229e7) on the same API server version, from the audit log of its ServiceAccount, in the step of the recorded cases in which an event changed nothing (test/oracle/meridio2/, ${m.where}); its leader-election Lease requests (${m.lease} in that window, about one every 2 s whether or not anything happens) are left out.`);
      L.push('');
      L.push('| controller | requests per no-op event | writes | reads | by verb | standing watches |');
      L.push('|---|---|---|---|---|---|');
      L.push(`| this function | ${noop.counts.total} | ${noop.counts.writes} | ${noop.counts.reads} | ${verbs(noop.counts)} | none of its own (the ApiServerSource adapter holds the watches that deliver events) |`);
      L.push(`| Meridio-2 (recorded) | ${m.total} | ${m.writes} | ${m.reads} | ${m.verbs} | ${m.watches} resources, opened at startup (one cache for the whole manager: its Gateway, DistributionGroup and EndpointNetworkConfiguration controllers) |`);
      L.push('');
      L.push(`Meridio-2 answers a no-op event from its informer cache (no read) and then sends a Deployment update anyway, because it compares the server-defaulted live spec with its undefaulted render: a request that goes through authentication, admission (every mutating and validating webhook or policy on Deployments) and validation, and changes nothing. The function reads the five objects it needs and writes nothing. So it sends more requests per no-op event (${noop.counts.total} against ${m.total}), and no write (${noop.counts.writes} against ${m.writes}).`);
      L.push('');
    }
  }

  if (r.p4) {
    L.push('## P4 fan-out convergence');
    L.push('');
    L.push('How: one GatewayConfiguration shared by n Gateways in one namespace, all Applied; it is edited once (not timed), then the ApiServerSource Resource-mode update event for it (`apiServerEvent` in events/outgoing.ts, the new object as data) is posted to the function. Dispatch lists the namespace\'s Gateways and fans out reconcile requests to K_SINK, which is the function itself (16 in flight), one per Gateway up to 16, beyond that each naming a batch of ceil(n / 16) Gateways (at most 10) whose class, GatewayConfiguration and routes it reads once (docs/design.md §2), and answers once all have answered. *outcomes* counts the reconcile requests (batches) by outcome. *Converged*: event posted until every Gateway reads back Applied=True naming the new generation (the read-back confirms what the dispatch answer already implies). Requests: audit log, controller identity, whole window.');
    L.push('');
    L.push('| n | event → dispatch answered | event → all Applied (new generation) | requests | per Gateway | per-request time in function | outcomes | repeats | load |');
    L.push('|---|---|---|---|---|---|---|---|---|');
    for (const s of r.p4.sizes) L.push(`| ${s.n} | ${sumMs(s.dispatchMs)} | ${sumMs(s.convergedMs)} | ${s.counts.total} (${verbs(s.counts)}) | ${s.requestsPerGateway.toFixed(2)} | ${ms(s.reconcileMs.median)} (p99 ${ms(s.reconcileMs.p99)}) | ${Object.entries(s.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')} | ${s.repeats} | ${s.load ?? '–'} |`);
    L.push('');
  }

  if (r.p5) {
    L.push('## P5 memory');
    L.push('');
    L.push(...p5Section(r.p5.concurrency, r.p5.variants.filter((v) => !exploratory(r, v.variant))));
    L.push('');
  }

  if (r.p6) {
    L.push('## P6 resync scale');
    L.push('');
    L.push('How: n Gateways in one namespace, converged first. **After** (the main build): one resync pass = a PingSource event posted to a fresh function process whose K_SINK is a stand-in for the Broker\'s ingress (it takes each reconcile request with 202 and counts it); the pass lists what the plans read (paginated, 500 a page), plans every Gateway and GatewayClass in memory with the reconcile\'s own planners, and fans out a reconcile request only for what drifted (functions/dispatch/resync.ts). One warm-up pass, then the in-sync passes; then d LB Deployments edited by hand (their image), one pass; then the GatewayConfiguration edited (every Gateway drifted), one pass. Peak memory is the process\'s VmHWM. **Before** (a build of the commit before issue 17, when given): its pass fanned out one reconcile per Gateway back to itself and answered when all had answered (or when its 50 s budget ran out: 503); one pass on a fresh process. Time: event posted → answered. Requests: audit log, controller identity.');
    L.push('');
    if (r.p6.memoryLimit) L.push(`Under an enforced memory limit: each build's process in a memory cgroup of its own with \`memory.limit_in_bytes\` = ${r.p6.memoryLimit} (the Knative Service's \`limits.memory\`; cgroup v1, as the kubelet sets a container's limit), started with the shipped NODE_OPTIONS; the kernel kills a process that would exceed it, as it kills a container. *cgroup peak*: \`memory.max_usage_in_bytes\` (resident pages and page cache charged to the cgroup) after the in-sync passes / at the end; *failcnt*: charges that met the limit (the kernel reclaimed instead). Builds compared in the same run ran phase by phase beside each other, on the same objects. Load: the 1-minute load average when each pass was answered (the machine was shared).`);
    L.push('');
    L.push('| n | build | in-sync pass | requests | writes | peak RSS | d drifted → requests fanned out | time | all n drifted → fanned out | time | peak RSS | memory limit: cgroup peak, failcnt, killed | load |');
    L.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    const limitCell = (l: LimitFigures | undefined): string => (l ? `${l.limit}: ${mb(l.inSyncPeakMb)} / ${mb(l.peakMb)}, failcnt ${l.failcnt}, ${l.oomKills > 0 ? `**killed ×${l.oomKills}**` : 'never killed'}` : 'not enforced');
    const loads = (b: P6Build): string => [b.inSync.load, b.drift.load, b.allDrifted.load].filter((x) => x !== undefined).join(' / ') || '–';
    const buildRow = (n: number, b: P6Build, label: string, allowance?: number): string =>
      `| ${n} | ${label} | ${sumMs(b.ms)} | ${b.inSync.counts.total}${allowance !== undefined ? ` (allowed ${allowance})` : ''}: ${verbs(b.inSync.counts)} | ${b.inSync.counts.writes} | ${mb(b.peakMb)} | ${b.drift.d} → ${b.drift.fannedOut}${b.drift.exact ? ' (exactly the edited ones)' : ' (NOT the edited ones)'} | ${ms(b.drift.ms)} | ${b.allDrifted.fannedOut}${b.allDrifted.fannedOut === n ? '' : `, answered ${b.allDrifted.status} (${b.allDrifted.outcome})`} | ${ms(b.allDrifted.ms)} | ${mb(b.allDrifted.peakMb)} | ${limitCell(b.memoryLimit)} | ${loads(b)} |`;
    for (const s of r.p6.sizes) {
      if (s.before) L.push(`| ${s.n} | before (${s.before.variant}) | ${ms(s.before.ms)}, answered ${s.before.status} (${s.before.outcome}) | ${s.before.counts.total} | ${s.before.counts.writes} | ${mb(s.before.peakMb)} | – | – | – | – | – | not enforced | – |`);
      L.push(buildRow(s.n, s, s.compared ? s.variant ?? 'after' : 'after', s.requestAllowance));
      for (const b of s.compared ?? []) {
        if ('ms' in b) L.push(buildRow(s.n, b, b.variant));
        else L.push(`| ${s.n} | ${b.variant} | **stopped in ${b.phase}: ${b.exit}** (VmHWM ${mb(b.lastPeakMb)} before it) | – | – | – | – | – | – | – | – | ${limitCell(b.memoryLimit)} | – |`);
      }
    }
    L.push('');
    L.push(`Planned per pass (the function's log line): ${r.p6.sizes.map((s) => `n=${s.n}: ${s.inSync.planned ?? '?'} Gateways, ${s.inSync.requests ?? '?'} requests counted by the function`).join('; ')}.`);
    L.push('');
  }

  if (r.p7) {
    L.push('## P7 the route read of one reconcile');
    L.push('');
    L.push('How: one Gateway in sync, r L34Routes in its namespace of which one names it. A warm no-op reconcile request posted to the function, posted → answered; its `list l34routes` requests from the audit log; the JSON size of the namespace\'s routes as the controller reads them (500 a page). The API server cannot filter routes by parentRef (a CRD field selector cannot address the list spec.parentRefs), so a reconcile reads every route of its namespace, every namespace\'s for a listener that admits others (docs/design.md §11).');
    L.push('');
    L.push('| routes in the namespace | no-op reconcile | list requests | route bytes read |');
    L.push('|---|---|---|---|');
    for (const row of r.p7.rows) L.push(`| ${row.routes} | ${sumMs(row.noop)} | ${row.listRequests} | ${(row.listBytes / 1024).toFixed(0)} KiB |`);
    L.push('');
  }
  if (wake) L.push(...p8Section(wake));
  if (image) L.push(...imageSection(image));
  if (r.p9) L.push(...p9Section(r.p9));
  if (r.p10) L.push(...p10Section(r.p10));
  if (extra) L.push(extra);
  return `${L.join('\n')}\n`;
}
