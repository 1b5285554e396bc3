import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { z } from 'zod';
import { apiServerEvent, reconcileEvent } from '../../events/outgoing.js';
import { DEPLOYMENTS } from '../../functions/kube/kube-api.js';
import { startLocalEventSource, type LocalEventSource } from '../../tools/dev/local-event-source.js';
import { runStream } from '../../tools/dev/watch-stream.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { FunctionProcess, SHIPPED_VARIANT, type Variant } from '../../tools/harness/function-process.js';
import { repoPath } from '../../tools/harness/repo-root.js';
import { zeroReplicasAtCreate } from '../../tools/mutating-policies.js';
import { advanceTally, startTally, tallyCounts, type AuditTally, type DeploymentListKind } from '../lib/audit-tally.js';
import { startBrokerStandIn } from '../lib/broker-stand-in.js';
import { createNamespace } from '../lib/cluster.js';
import { names, requestCounts, type BenchContext, type RequestCounts } from '../lib/context.js';
import { load1 } from '../lib/machine.js';
import { createConfiguration, createGateways } from '../lib/objects.js';
import { converge } from './resync.js';

// P10: what the rollout budget's drain costs (issue 40, item 5). n Gateways
// in sync with LB_ROLLOUT_BUDGET=k, then a template change (a new function
// process whose TEMPLATE_PATH names a template with another LB image, as a
// new Revision starts): every LB Deployment must roll, k at a time. Events
// reach the function as the shipped path delivers them: the local stand-in
// for the ApiServerSource (every change of the Gateways, configurations,
// routes, classes and LB Deployments, one delivery at a time per stream) and
// the PingSource (a resync when it starts, then every 5 minutes: twice the
// shipped schedule's rate, so a long drain's figures hold at least as many
// resyncs as it would meet in a cluster); K_SINK is the function itself. The real Deployment controller
// rolls the Deployments: a policy stores each LB Deployment at 0 replicas
// (enforceReplicas false keeps it there), and a 0-replica rollout completes
// at once without Pods. The drain is over when every LB Deployment's pod
// template carries the new image and the Deployment controller says that
// rollout completed (judged from the Deployments alone, from a watch), and
// the function has gone quiet. Every request the controller identity made
// from the new process's start to its stop is counted from the audit log.
//
// Then, once, a settled Deployment's status event alone: with K_SINK a
// Broker stand-in that keeps the fan-out, the event's own requests are the
// census it reads (its owner's reconcile and the woken Gateway's run in
// other invocations).

export interface P10Progress {
  /** LB Deployments rolled so far, and the controller's requests until then. */
  rolled: number;
  requests: number;
}

export interface P10Row {
  n: number;
  budget: number;
  /** LB Deployments on the new template, rollout completed, at the end (of n). */
  rolled: number;
  /** Every one rolled before the deadline; otherwise the figures are of the prefix that rolled. */
  complete: boolean;
  counts: RequestCounts;
  /** counts.total / rolled. */
  requestsPerGateway: number;
  /** The `list deployments` requests by rollout-index list (a census is one `rolling` list and one `line` list). */
  deploymentLists: Record<DeploymentListKind, number>;
  /** Most LB Deployments rolling at once (new image, rollout not completed), sampled at every watch event. */
  maxRolling: number;
  /** Events the function handled, by CloudEvent type. */
  events: Record<string, number>;
  /** Requests so far every 30 s of the drain, and at its end: constant requests per rolled Gateway is the linearity. */
  progress: P10Progress[];
  /** Process start → every Deployment rolled, and → quiet (the tail of label patches and no-op reconciles). */
  rolledMs: number;
  quietMs: number;
  load: string;
}

export interface P10Slope {
  budget: number;
  from: number;
  to: number;
  /** (requests(to) − requests(from)) / (to − from). */
  perExtraGateway: number;
  /** requests(to) / requests(from): to/from for linear, (to/from)² for quadratic. */
  ratio: number;
}

export interface P10StatusEvent {
  n: number;
  /** The status event of an LB Deployment whose rollout settled while its index label still said rolling. */
  settled: { counts: RequestCounts; deploymentLists: number; targets: number };
  /** The next status event of the same Deployment, its label back to the template's: no census. */
  again: { counts: RequestCounts; deploymentLists: number; targets: number };
}

export interface P10Result {
  rows: P10Row[];
  slopes: P10Slope[];
  statusEvent?: P10StatusEvent;
  /** Per-Gateway allowance the quick test holds the rows to (see ALLOWANCE_PER_GATEWAY). */
  allowancePerGateway: number;
}

/**
 * Requests per rolled Gateway the drain may cost. Per Gateway, from the
 * census design (docs/design.md §12): its verdict when the resync or a wake
 * hands it over (the 5 reads of a reconcile, one census of 2 lists, the
 * Deployment update, a status write), queued first when not yet its turn
 * (the same reads and census, a status write), the census of its settled
 * Deployment's status event and its owner's label patch, and the no-op
 * reconciles (5 reads each) of the events its writes cause: the Deployment
 * controller's status writes (about 3), the label patch, its Gateway status
 * writes (about 3). About 16 + 14 + 5 × 8 ≈ 70; 100 leaves room for the
 * Deployment controller's extra status writes under load.
 */
export const ALLOWANCE_PER_GATEWAY = 100;

const LB_IMAGE = 'registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer:latest';
const LB_CONTAINER = 'loadbalancer';
const RESYNC_INTERVAL_MS = 300_000;

const DeploymentView = z.looseObject({
  metadata: z.looseObject({ name: z.string(), generation: z.number().optional(), resourceVersion: z.string().optional() }),
  spec: z.looseObject({
    replicas: z.number().optional(),
    template: z.looseObject({ spec: z.looseObject({ containers: z.array(z.looseObject({ name: z.string(), image: z.string().optional() })) }).optional() }),
  }),
  status: z.looseObject({
    observedGeneration: z.number().optional(),
    replicas: z.number().optional(),
    updatedReplicas: z.number().optional(),
    conditions: z.array(z.looseObject({ type: z.string(), reason: z.string().optional() })).optional(),
  }).optional(),
});
type DeploymentView = z.infer<typeof DeploymentView>;

const lbImage = (d: DeploymentView): string | undefined => d.spec.template.spec?.containers.find((c) => c.name === LB_CONTAINER)?.image;

/** The Deployment controller has seen the latest spec and says its rollout completed, every replica updated. */
function rolledOut(d: DeploymentView): boolean {
  const s = d.status ?? {};
  const wanted = d.spec.replicas ?? 1;
  const progressing = (s.conditions ?? []).find((c) => c.type === 'Progressing');
  return (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) && progressing?.reason === 'NewReplicaSetAvailable' && (s.updatedReplicas ?? 0) === wanted && (s.replicas ?? 0) === wanted;
}

/** The namespace's LB Deployments as the API server has them now, from one list-then-watch. */
interface DeploymentWatch {
  all: Map<string, DeploymentView>;
  /** Called after every change seen. */
  onChange?: () => void;
  stop(): Promise<void>;
}

async function watchDeployments(ctx: BenchContext, namespace: string): Promise<DeploymentWatch> {
  const abort = new AbortController();
  const all = new Map<string, DeploymentView>();
  const w: DeploymentWatch = { all, stop: async () => undefined };
  const newer = (d: DeploymentView): boolean => Number(d.metadata.resourceVersion ?? 0) >= Number(all.get(d.metadata.name)?.metadata.resourceVersion ?? 0);
  const quiet = { debug: () => undefined, info: () => undefined, warn: (o: object, m: string) => ctx.log(`P10 watch: ${m} ${JSON.stringify(o)}`) };
  let ready: () => void = () => undefined;
  const readyNow = new Promise<void>((r) => {
    ready = r;
  });
  const loop = runStream(ctx.cluster.admin, { ...DEPLOYMENTS, kind: 'Deployment', namespace }, {
    log: quiet,
    onReady: () => ready(),
    onEvent: (action, object) => {
      const d = DeploymentView.safeParse(object);
      if (!d.success) return;
      if (action === 'delete') all.delete(d.data.metadata.name);
      else if (newer(d.data)) all.set(d.data.metadata.name, d.data);
      w.onChange?.();
    },
  }, abort.signal);
  await readyNow;
  // The stream sends nothing for what exists: a list after it is watching fills the rest in.
  const apps = ctx.cluster.admin.makeApiClient(AppsV1Api);
  let token: string | undefined;
  do {
    const page = await apps.listNamespacedDeployment({ namespace, limit: 500, ...(token ? { _continue: token } : {}) });
    for (const item of page.items) {
      const d = DeploymentView.safeParse(item);
      if (d.success && newer(d.data)) all.set(d.data.metadata.name, d.data);
    }
    token = page.metadata?._continue;
  } while (token);
  w.stop = async () => {
    abort.abort();
    await loop;
  };
  return w;
}

/** Template files with the LB image of the given version; removed with `dispose`. */
function templateFiles(): { file(version: number): string; image(version: number): string; dispose(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-p10-'));
  const shipped = readFileSync(repoPath('infra', 'templates', 'lb-deployment.yaml'), 'utf8');
  if (!shipped.includes(LB_IMAGE)) throw new Error(`the shipped LB template no longer names ${LB_IMAGE}`);
  const image = (v: number): string => `registry.example/p10-lb:v${v}`;
  return {
    image,
    file: (v) => {
      const path = join(mkdtempSync(join(dir, 'tpl-')), 'lb-deployment.yaml');
      writeFileSync(path, shipped.replace(LB_IMAGE, image(v)));
      return path;
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function withEnv(base: Variant, env: Record<string, string>): Variant {
  return { ...base, env: { ...base.env, ...env } };
}

interface DrainOptions {
  n: number;
  budget: number;
  image: string;
  templatePath: string;
  variant: Variant;
  deadlineMs: number;
}

async function drain(ctx: BenchContext, ns: string, watch: DeploymentWatch, o: DrainOptions): Promise<P10Row> {
  const { cluster: c, identity } = ctx;
  const expected = new Set(names('gw', 0, o.n).map((g) => `sllbr-${g}`));
  const rolledNow = (): number => {
    let r = 0;
    for (const name of expected) {
      const d = watch.all.get(name);
      if (d && lbImage(d) === o.image && rolledOut(d)) r++;
    }
    return r;
  };
  let maxRolling = 0;
  watch.onChange = () => {
    let open = 0;
    for (const name of expected) {
      const d = watch.all.get(name);
      if (d && lbImage(d) === o.image && !rolledOut(d)) open++;
    }
    maxRolling = Math.max(maxRolling, open);
  };
  // Nothing of the controller identity runs now: the tally starts clean.
  const tally: AuditTally = startTally(c.info.auditLog);
  const t0 = performance.now();
  const loads = [load1()];
  const fn = await FunctionProcess.start({ variant: withEnv(o.variant, { TEMPLATE_PATH: o.templatePath, LB_ROLLOUT_BUDGET: String(o.budget) }), kubeconfig: identity.kubeconfig, namespaces: [ns] });
  let source: LocalEventSource | undefined;
  const progress: P10Progress[] = [];
  let rolled = 0;
  let rolledMs = Number.NaN;
  try {
    const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined };
    source = await startLocalEventSource({ kc: c.admin, sink: `${fn.url}/`, namespaces: [ns], resyncIntervalMs: RESYNC_INTERVAL_MS, log: quiet });
    let lastLog = performance.now();
    const checkpoint = (): void => {
      advanceTally(tally, c.info.auditLog, identity.username);
      progress.push({ rolled, requests: tallyCounts(tally).total });
    };
    const done = await waitFor(`n=${o.n} budget ${o.budget}: every LB Deployment rolled`, () => {
      rolled = rolledNow();
      if (performance.now() - lastLog > 30_000) {
        lastLog = performance.now();
        loads.push(load1());
        checkpoint();
        ctx.log(`P10 n=${o.n} budget ${o.budget}: ${rolled} rolled after ${Math.round((performance.now() - t0) / 1000)} s, ${tallyCounts(tally).total} requests so far (most at once ${maxRolling})`);
      }
      return rolled === o.n ? true : undefined;
    }, { timeoutMs: o.deadlineMs, intervalMs: 250 }).catch((err: unknown) => {
      ctx.log(`P10 n=${o.n} budget ${o.budget}: ${err instanceof Error ? err.message : String(err)}; ${rolled} rolled: the figures are of that prefix`);
      return false;
    });
    rolledMs = performance.now() - t0;
    // The tail: the last settled Deployments' events, their owners' label patches, and the no-op reconciles they cause.
    // A prefix stops at once instead: the drain would go on, and its requests must match the Gateways counted.
    if (done === true) await fn.quiet(5000, 600_000).catch(() => ctx.log(`P10 n=${o.n} budget ${o.budget}: the function did not go quiet`));
  } finally {
    await source?.stop();
    await fn.stop();
    watch.onChange = undefined;
  }
  // What the stopped function started and the Deployment controller completed by now.
  rolled = rolledNow();
  const quietMs = performance.now() - t0;
  loads.push(load1());
  advanceTally(tally, c.info.auditLog, identity.username);
  const counts = tallyCounts(tally);
  progress.push({ rolled, requests: counts.total });
  const events: Record<string, number> = {};
  for (const l of fn.logs) {
    if (l.msg !== 'event handled' || typeof l.type !== 'string') continue;
    events[l.type] = (events[l.type] ?? 0) + 1;
  }
  fn.clearLogs();
  return {
    n: o.n,
    budget: o.budget,
    rolled,
    complete: rolled === o.n,
    counts,
    requestsPerGateway: rolled > 0 ? counts.total / rolled : Number.NaN,
    deploymentLists: tally.deploymentLists,
    maxRolling,
    events,
    progress,
    rolledMs: Math.round(rolledMs),
    quietMs: Math.round(quietMs),
    load: `${Math.min(...loads)}–${Math.max(...loads)}`,
  };
}

/** The status events of one settled Deployment, alone: the fan-out kept by a Broker stand-in. */
async function statusEvent(ctx: BenchContext, ns: string, watch: DeploymentWatch, n: number, o: { image: string; templatePath: string; variant: Variant }): Promise<P10StatusEvent> {
  const { cluster: c, identity } = ctx;
  const sink = await startBrokerStandIn();
  const fn = await FunctionProcess.start({ variant: withEnv(o.variant, { TEMPLATE_PATH: o.templatePath, LB_ROLLOUT_BUDGET: '1' }), kubeconfig: identity.kubeconfig, namespaces: [ns], sink: sink.url });
  const gw = names('gw', 0, 1)[0] as string;
  const apps = c.admin.makeApiClient(AppsV1Api);
  const deliver = async (): Promise<{ counts: RequestCounts; deploymentLists: number; targets: number }> => {
    const live = await apps.readNamespacedDeployment({ namespace: ns, name: `sllbr-${gw}` });
    const ev = apiServerEvent('update', { ...live, apiVersion: 'apps/v1', kind: 'Deployment', metadata: { ...live.metadata, name: `sllbr-${gw}`, namespace: ns } }, c.info.server);
    sink.clear();
    const window = await c.audit.begin();
    const r = await fn.post(ev);
    await fn.handled(ev.id, 60_000);
    const counts = requestCounts(await window.end(), identity.username);
    if (r.status >= 300) throw new Error(`the Deployment's event answered ${r.status}`);
    return { counts, deploymentLists: counts.byVerb['list deployments'] ?? 0, targets: sink.keys.length };
  };
  try {
    // The first Gateway in line takes the one slot: its rollout starts, as a wake would start it.
    const r = await fn.post(reconcileEvent({ namespace: ns, name: gw }));
    if (r.status >= 300) throw new Error(`the reconcile of ${gw} answered ${r.status}`);
    await waitFor(`sllbr-${gw} rolled to ${o.image}`, () => {
      const d = watch.all.get(`sllbr-${gw}`);
      return d && lbImage(d) === o.image && rolledOut(d) ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    const settled = await deliver();
    // Its owner's reconcile (which the stand-in kept) takes the label back.
    const owner = await fn.post(reconcileEvent({ namespace: ns, name: gw }));
    if (owner.status >= 300) throw new Error(`the reconcile of ${gw} answered ${owner.status}`);
    const again = await deliver();
    return { n, settled, again };
  } finally {
    await fn.stop();
    await sink.close();
  }
}

export function slopes(rows: P10Row[]): P10Slope[] {
  const out: P10Slope[] = [];
  for (const budget of [...new Set(rows.map((r) => r.budget))]) {
    const mine = rows.filter((r) => r.budget === budget && r.complete).sort((a, b) => a.n - b.n);
    const from = mine[0];
    const to = mine[mine.length - 1];
    if (!from || !to || from.n === to.n) continue;
    out.push({ budget, from: from.n, to: to.n, perExtraGateway: (to.counts.total - from.counts.total) / (to.n - from.n), ratio: to.counts.total / from.counts.total });
  }
  return out;
}

export async function measureDrain(ctx: BenchContext, opts: { sizes: number[]; budgets: number[]; variant?: Variant; deadlineMs?: number }): Promise<P10Result> {
  const { cluster: c } = ctx;
  if (!c.controllerManager) throw new Error('P10 needs kube-controller-manager: its Deployment controller completes the rollouts');
  const variant = opts.variant ?? SHIPPED_VARIANT;
  const ns = await createNamespace(c, 'bench-p10');
  const zero = await zeroReplicasAtCreate(c.admin, ns);
  const templates = templateFiles();
  await createConfiguration(c, ns, 'cfg', 1, false);
  const watch = await watchDeployments(ctx, ns);
  const rows: P10Row[] = [];
  let version = 1;
  let have = 0;
  let statusEventRow: P10StatusEvent | undefined;
  try {
    const sizes = [...opts.sizes].sort((a, b) => a - b);
    for (const n of sizes) {
      ctx.log(`P10 n=${n}: creating ${n - have} Gateways`);
      await createGateways(c, ns, names('gw', have, n), ctx.className, 'cfg', 16);
      have = Math.max(have, n);
      // Creates never wait for the budget; the converge's last passes take the index labels back.
      await converge(ctx, ns, n, withEnv(variant, { TEMPLATE_PATH: templates.file(version), LB_ROLLOUT_BUDGET: String(opts.budgets[0] ?? 1) }), 'P10');
      for (const budget of opts.budgets) {
        version++;
        ctx.log(`P10 n=${n} budget ${budget}: template change to ${templates.image(version)}`);
        const row = await drain(ctx, ns, watch, { n, budget, image: templates.image(version), templatePath: templates.file(version), variant, deadlineMs: opts.deadlineMs ?? 3_600_000 });
        ctx.log(`P10 n=${n} budget ${budget}: ${row.rolled} rolled, ${row.counts.total} requests (${row.requestsPerGateway.toFixed(1)} per Gateway), most at once ${row.maxRolling}, in ${Math.round(row.quietMs / 1000)} s`);
        rows.push(row);
        // The row whole, so that a run stopped later still leaves it.
        ctx.log(`P10 row ${JSON.stringify(row)}`);
      }
    }
    version++;
    statusEventRow = await statusEvent(ctx, ns, watch, have, { image: templates.image(version), templatePath: templates.file(version), variant });
  } finally {
    await watch.stop();
    await zero.remove();
    templates.dispose();
  }
  return { rows, slopes: slopes(rows), ...(statusEventRow ? { statusEvent: statusEventRow } : {}), allowancePerGateway: ALLOWANCE_PER_GATEWAY };
}
