import { ksmIdentity, startKubeStateMetrics } from '../support/kube-state-metrics.js';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Watch } from '@kubernetes/client-node';
import { HTTP, type CloudEvent } from 'cloudevents';
import { dump, load, loadAll } from 'js-yaml';
import { pingEvent } from '../../events/outgoing.js';
import { PING_TYPE, RECONCILE_TYPE } from '../../events/types.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import type { LogLine } from '../../tools/harness/function-process.js';
import { repoPath } from '../../tools/harness/repo-root.js';
import { CONDITION_APPLIED, CONDITION_LB_AVAILABLE, KSM_JOB, seconds } from '../../tools/monitoring/alerts.mjs';
import { RULE_FILE } from '../../tools/monitoring/files.mjs';
import { SHIPPED_RESYNC_SECONDS } from '../../tools/monitoring/shipped-alerts.mjs';
import { adminConfig, useNamespace } from '../support/cluster.js';
import type { ProxiedRequest } from '../support/cluster-dns-proxy.js';
import { useEventPaths } from '../support/event-path.js';
import { APPLIED, LB_AVAILABLE, condition, configurationSpec, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from '../support/fixtures.js';
import { tail, type GoProcess } from '../support/go-process.js';
import { freezeDeployments } from '../support/policies.js';
import { startPrometheus, type PrometheusProcess } from '../support/telemetry-backends.js';

// The seed's failure on the real timeline, and whether the shipped alert
// pages on it (measured timeline: docs/operations.md, "The seed's failure, minute by minute").
//
// 1. RECORD. The real Knative Eventing data plane (Broker ingress, in-memory
//    channel dispatcher, filter) with the shipped Broker and Triggers
//    (infra/knative: their delivery, retry 6, exponential backoff from PT1S,
//    dead-letter sink = the function's /dead-letter), the shipped
//    ApiServerSource adapter and the shipped function process (startup
//    snapshot). Two Gateways share one GatewayConfiguration; a
//    ValidatingAdmissionPolicy denies writes to one Gateway's LB Deployment
//    (the seed), then the GatewayConfiguration is edited. The real
//    kube-state-metrics (shipped CustomResourceState configuration, as the
//    shipped ServiceAccount role) is scraped every second by a real
//    Prometheus; the series are read back with query_range at the end, the
//    Gateway's every status write from a watch, each delivery from the
//    function's log.
//
//    THE ONE SCALED THING: the resync. The shipped PingSource fires every
//    10 minutes (infra/knative/pingsource.yaml); here the test sends the
//    PingSource's event itself (events/outgoing.ts pingEvent, to the Broker
//    ingress, so the resync Trigger's delivery applies, with no send timeout,
//    as the PingSource adapter has none: K_SINK_TIMEOUT -1) on a timer every
//    PING_PERIOD_S (90 s), so that a failing delivery's whole retry chain
//    (63 s of backoff with the shipped Triggers) fits within one period.
//    Everything else runs at its shipped timing. A timer drives the
//    schedule; every wait on the system is a waitFor with a deadline.
//
//    What it shows (asserted below): the condition turns False/ApplyFailed
//    at the edit and stays so, lastTransitionTime unmoved, until the resync
//    after the lift applies the edit. It never becomes RetriesExhausted: a
//    lone drifted Gateway is reconciled inside the resync's own invocation,
//    so each ping's retry chain ends in a dead-lettered ping, which the
//    function does not record; and the one reconcile request there is (the
//    edit's fan-out to both Gateways) is never dead-lettered, because the
//    in-memory channel answers the function's post only once the retries are
//    over and the function gives up on each post after its 10 s fan-out
//    timeout, which cancels that delivery in the Broker.
//
// 2. REPLAY. The recorded sequence (offsets from each ping, reasons,
//    lastTransitionTime) is laid onto the shipped schedule (SHIPPED_RESYNC_SECONDS), cycle
//    after cycle, sampled at a 30 s scrape interval, the last failing
//    resync at minute 60 and the recorded fix after it, and run through
//    `promtool test rules` with the committed rule file
//    (infra/monitoring/...rules.yaml, unmodified). One substitution, said
//    here: the LoadBalancerAvailable condition is replayed as True, since
//    the test control plane has no Node (LB Pods never run there; in the
//    seed they keep serving the old configuration). Since the recording has
//    one reason only, the same replay is also run with the alternation the
//    design documents (RetriesExhausted once each chain is dead-lettered,
//    the recorded chain's length after each resync), which the rules must
//    page on the same way. A control (the same replay, lifted after the
//    resync of minute 10: applied 11.5 minutes after the edit)
//    must not page, and the main expectations must fail on it.
//
// SEED_TIMELINE_KEEP=<file> keeps the recording there, and the generated
// promtool files in their temporary directory.

const SHIPPED = 'infra';
const NOT_APPLIED = 'MeridioGatewayConfigurationNotApplied';
/** The scaled resync period of the recording (the shipped one is SHIPPED_RESYNC_SECONDS). */
const PING_PERIOD_S = 90;
/** Failing resync cycles recorded before the policy is lifted. */
const FAILING_PINGS = 3;
/** The replay: scrape and rule evaluation interval; the minute of the last failing resync (the lift follows it as recorded), of the control's; its length. */
const REPLAY_STEP_S = 30;
const REPLAY_FIX_MINUTE = 60;
const REPLAY_CONTROL_FIX_MINUTE = 10;
const REPLAY_MINUTES = 100;
const FROZEN = 'frozen';
const HEALTHY = 'healthy';
const run = promisify(execFile);

// --- The shipped delivery, read from infra/knative/triggers.yaml.

interface Delivery { retry: number; backoffPolicy: string; backoffDelay: string; deadLetterSink?: { uri?: string } }

function shippedDelivery(trigger: string): Delivery {
  const docs = loadAll(readFileSync(repoPath('infra/knative/triggers.yaml'), 'utf8')) as Array<{ metadata?: { name?: string }; spec?: { delivery?: Delivery } } | undefined>;
  const d = docs.find((x) => x?.metadata?.name === trigger)?.spec?.delivery;
  if (!d) throw new Error(`infra/knative/triggers.yaml: no delivery for Trigger ${trigger}`);
  return d;
}

/** ISO 8601 seconds (PT1S, PT0.5S, PT2M). */
function isoSeconds(d: string): number {
  const m = /^PT(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(d);
  if (!m) throw new Error(`unsupported duration ${d}`);
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

/** The backoff of a whole retry chain: the seconds from the first attempt to the last. */
function retryChainSeconds(d: Delivery): number {
  const base = isoSeconds(d.backoffDelay);
  let sum = 0;
  for (let n = 0; n < d.retry; n++) sum += d.backoffPolicy === 'exponential' ? base * 2 ** n : base;
  return sum;
}

// --- The recording.

interface SeenCondition { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }
interface Seen { at: number; name: string; resourceVersion: string; conditions: SeenCondition[] }
interface Ping { n: number; sentAt: number; answeredAt?: number; status?: number; id: string }
interface RangeSeries { metric: Record<string, string>; values: Array<[number, string]> }

interface Recording {
  ns: string;
  cls: string;
  /** Unix seconds. */
  start: number;
  edit: number;
  pings: Ping[];
  lift: number;
  end: number;
  seen: Seen[];
  logs: LogLine[];
  /** What the cluster DNS proxy saw of this namespace's Broker (ingress, channel, filter). */
  proxied: ProxiedRequest[];
  series: RangeSeries[];
}

/**
 * Every status a Gateway passes through, from a watch (a state that lasts
 * seconds is still seen). Bookmarks keep it from idling out; a watch that
 * ends anyway is opened again from the last resourceVersion seen.
 */
async function watchGateways(ns: string): Promise<{ seen: Seen[]; stop(): void }> {
  const seen: Seen[] = [];
  let stopped = false;
  let resourceVersion: string | undefined;
  let controller: AbortController | undefined;
  const open = async (): Promise<void> => {
    controller = await new Watch(adminConfig()).watch(`/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways`, { allowWatchBookmarks: true, ...(resourceVersion ? { resourceVersion } : {}) }, (phase, obj: { metadata: { name: string; resourceVersion: string }; status?: { conditions?: SeenCondition[] } }) => {
      resourceVersion = obj.metadata.resourceVersion;
      if (phase === 'BOOKMARK') return;
      seen.push({ at: Date.now(), name: obj.metadata.name, resourceVersion: obj.metadata.resourceVersion, conditions: obj.status?.conditions ?? [] });
    }, () => {
      if (stopped) return;
      // Too old a resourceVersion (410): from now, with every Gateway as ADDED.
      void open().catch(() => {
        resourceVersion = undefined;
        return open();
      });
    });
  };
  await open();
  return { seen, stop: () => {
    stopped = true;
    controller?.abort();
  } };
}

/** One POST of a CloudEvent with no timeout (the PingSource adapter has none): the status once answered. */
function postWithoutTimeout(url: string, event: CloudEvent<unknown>): Promise<number> {
  const message = HTTP.binary(event);
  const body = typeof message.body === 'string' ? message.body : JSON.stringify(message.body ?? {});
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, headers: { ...(message.headers as Record<string, string>), 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const appliedOf = (s: Seen): SeenCondition | undefined => s.conditions.find((c) => c.type === APPLIED);
const unix = (iso: string | undefined): number => (iso ? Math.round(Date.parse(iso) / 1000) : Number.NaN);

// --- The replay.

type Labels = Record<string, string>;
const seriesKey = (l: Labels): string => JSON.stringify(Object.keys(l).sort().map((k) => [k, l[k]]));

function seriesSelector(l: Labels): string {
  const { __name__: name, ...rest } = l;
  return `${name ?? ''}{${Object.keys(rest).sort().map((k) => `${k}=${JSON.stringify(rest[k])}`).join(', ')}}`;
}

/**
 * The recording, in Unix seconds: the edit, the failing resyncs, when the
 * policy was lifted, and what applied the edit after that: a resync (its
 * ping's time) or a delivery already under way (then the lift's time).
 */
interface Phases { start: number; edit: number; pings: number[]; lift: number; fix: number; fixByPing: boolean; end: number }

/** A stretch of the replay (seconds from 0) that plays a stretch of the recording from its start, holding its last state when longer. */
interface Segment { recStart: number; recEnd: number; replayStart: number; replayEnd: number }

interface ReplayPlan {
  /** Replay seconds of the edit, of each failing resync, of the lift and of what applied the fix. */
  edit: number;
  failing: number[];
  lift: number;
  fix: number;
  end: number;
  segments: Segment[];
}

/**
 * The recording laid onto the shipped schedule: the edit as long before the
 * first resync as recorded; the first failing cycle as recorded (it holds
 * what is left of the edit's own deliveries), then the other recorded
 * failing cycles in turn, every resync period; the last of them before the
 * lift, with the lift as long after its resync as recorded; the last
 * failing resync at `fixMinute`; the fix as recorded after the lift, or, if
 * a resync applied it, at the next resync of the shipped schedule.
 */
function replayPlan(rec: Phases, fixMinute: number, minutes: number): ReplayPlan {
  const period = SHIPPED_RESYNC_SECONDS;
  const last = fixMinute * 60;
  if (last % period !== 0) throw new Error(`the last failing resync at minute ${fixMinute} is not on the shipped ${period} s schedule`);
  const m = rec.pings.length;
  if (m < 2) throw new Error('the replay needs two recorded failing cycles at least');
  const edit = period - (rec.pings[0]! - rec.edit);
  const failing: number[] = [];
  for (let t = period; t <= last; t += period) failing.push(t);
  const lift = last + (rec.lift - rec.pings[m - 1]!);
  const fix = rec.fixByPing ? Math.floor(lift / period) * period + period : lift;
  const cycle = (k: number): number => (k === 0 ? 0 : k === failing.length - 1 ? m - 1 : 1 + ((k - 1) % (m - 1)));
  const segments: Segment[] = [
    { recStart: rec.edit - edit, recEnd: rec.edit, replayStart: 0, replayEnd: edit },
    { recStart: rec.edit, recEnd: rec.pings[0]!, replayStart: edit, replayEnd: failing[0]! },
    ...failing.map((p, k) => {
      const j = cycle(k);
      return { recStart: rec.pings[j]!, recEnd: j + 1 < m ? rec.pings[j + 1]! : rec.lift, replayStart: p, replayEnd: k + 1 < failing.length ? failing[k + 1]! : lift };
    }),
    { recStart: rec.lift, recEnd: rec.fix, replayStart: lift, replayEnd: fix },
    { recStart: rec.fix, recEnd: rec.end + 1, replayStart: fix, replayEnd: minutes * 60 + 1 },
  ].filter((s) => s.replayEnd > s.replayStart && s.recEnd > s.recStart);
  return { edit, failing, lift, fix, end: minutes * 60, segments };
}

/** Replay second → the recorded second it shows. */
function recordedAt(rec: Phases, plan: ReplayPlan, t: number): number {
  const s = plan.segments.find((x) => x.replayStart <= t && t < x.replayEnd);
  if (!s) throw new Error(`replay second ${t} is in no segment`);
  return Math.max(rec.start, Math.min(s.recStart + (t - s.replayStart), s.recEnd - 1));
}

/** A recorded Unix time (a lastTransitionTime) → replay seconds: where the latest replay (by `now`) of its stretch put it. */
function replayTimeOf(plan: ReplayPlan, at: number, now: number): number {
  const holding = plan.segments.filter((s) => s.recStart <= at && at < s.recEnd);
  const s = holding.filter((x) => x.replayStart <= now).at(-1) ?? holding[0];
  if (!s) return at < plan.segments[0]!.recStart ? 0 : plan.end;
  return Math.max(0, s.replayStart + (at - s.recStart));
}

/** What the seed's condition on LoadBalancerAvailable is in a cluster with Nodes: True (see the header). */
function substitute(l: Labels): Labels {
  if (l.type !== CONDITION_LB_AVAILABLE) return l;
  return { ...l, status: 'True', ...(l.reason !== undefined ? { reason: 'Available' } : {}) };
}

interface ReplaySeries { labels: Labels; values: Array<number | undefined> }

/** The recorded series laid onto the replay's schedule, one value (or none) per step. */
function replaySeries(recording: Recording, rec: Phases, plan: ReplayPlan): ReplaySeries[] {
  const at = new Map<string, { labels: Labels; byTime: Map<number, number> }>();
  for (const s of recording.series) {
    const labels = substitute(s.metric);
    const key = seriesKey(labels);
    const entry = at.get(key) ?? { labels, byTime: new Map<number, number>() };
    for (const [t, v] of s.values) entry.byTime.set(Math.round(t), Number(v));
    at.set(key, entry);
  }
  const steps = Math.floor(plan.end / REPLAY_STEP_S) + 1;
  const out: ReplaySeries[] = [];
  for (const { labels, byTime } of at.values()) {
    const values: Array<number | undefined> = [];
    for (let i = 0; i < steps; i++) {
      const t = i * REPLAY_STEP_S;
      const r = recordedAt(rec, plan, t);
      const v = byTime.get(r);
      const isTime = labels.__name__?.endsWith('_last_transition_time') ?? false;
      values.push(v === undefined ? undefined : isTime ? replayTimeOf(plan, v, t) : v);
    }
    if (values.some((v) => v !== undefined)) out.push({ labels, values });
  }
  return out;
}

/** promtool's notation: a value per step, `stale` where a series disappears (Prometheus writes a staleness marker), `_` while absent. */
function promtoolValues(values: Array<number | undefined>): string {
  const out: string[] = [];
  let present = false;
  for (const v of values) {
    if (v === undefined) {
      out.push(present ? 'stale' : '_');
      present = false;
    } else {
      out.push(String(v));
      present = true;
    }
  }
  return out.join(' ');
}

/** Prometheus's humanizeDuration for a value of a second or more (prometheus/common helpers/templates). */
function humanizeDuration(v: number): string {
  const d = Math.trunc(v);
  const [s, m, h, days] = [d % 60, Math.trunc(d / 60) % 60, Math.trunc(d / 3600) % 24, Math.trunc(d / 86400)];
  if (days) return `${days}d ${h}h ${m}m ${s}s`;
  if (h) return `${h}h ${m}m ${s}s`;
  if (m) return `${m}m ${s}s`;
  return `${Number(v.toPrecision(4))}s`;
}

interface ShippedRule { alert: string; expr: string; for?: string; keep_firing_for?: string; labels: Labels; annotations: Labels; group: string }

/** The committed rule file's alerts, each with its group's name. */
function shippedRules(): ShippedRule[] {
  const doc = load(readFileSync(repoPath(RULE_FILE), 'utf8')) as { groups: Array<{ name: string; rules: Array<Omit<ShippedRule, 'group'>> }> };
  return doc.groups.flatMap((g) => g.rules.map((r) => ({ ...r, group: g.name })));
}

/** Renders one of the shipped annotation templates for an alert: its labels, its value, and the reason its `query` reads. */
function render(template: string, labels: Labels, value: number, reasons: string[]): string {
  const reasonBlock = /\{\{ with printf `[^`]*` [^}]*\| query \}\}.*?\{\{ else \}\}none\{\{ end \}\}/g;
  const out = template
    .replace(reasonBlock, reasons.length > 0 ? reasons.join(', ') : 'none')
    .replace(/\{\{ \$value \| humanizeDuration \}\}/g, humanizeDuration(value))
    .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, k: string) => labels[k] ?? '');
  if (out.includes('{{')) throw new Error(`an annotation template this test does not render: ${template}`);
  return out;
}

describe('the seed timeline: recorded on the real data plane, replayed against the shipped alert rules', () => {
  const ns = useNamespace('seedtl');
  const paths = useEventPaths();
  let ksmBinary: string;
  let promtool: string;
  let prometheus: PrometheusProcess | undefined;
  let ksm: GoProcess | undefined;
  let recording: Recording | undefined;
  const work = mkdtempSync(join(tmpdir(), 'seed-timeline-'));

  beforeAll(async () => {
    ksmBinary = (await ensureGoTool('kube-state-metrics')).binary;
    promtool = (await ensureGoTool('promtool')).binary;
  }, 45 * 60 * 1000);

  afterAll(async () => {
    await ksm?.stop();
    await prometheus?.stop();
    if (!process.env.SEED_TIMELINE_KEEP) rmSync(work, { recursive: true, force: true });
  }, 60000);

  it(`records the seed on the real data plane: the shipped Broker, Triggers and dead-letter sink, resyncs every ${PING_PERIOD_S} s, kube-state-metrics`, async () => {
    const start = Math.floor(Date.now() / 1000);
    const { fn, cls, wiring } = await paths.start(ns(), SHIPPED);
    const plane = paths.eventing();

    // kube-state-metrics as its shipped identity, with the shipped configuration; Prometheus scrapes it every second.
    const identity = await ksmIdentity(ns());
    const port = await freePort();
    ksm = await startKubeStateMetrics(ksmBinary, identity, port);
    const k = ksm;
    prometheus = await startPrometheus({ scrape: [{ job: KSM_JOB, target: `127.0.0.1:${port}` }], intervalSeconds: 1 });
    const p = prometheus;

    // Two Gateways of one GatewayConfiguration, both applied, and their Deployments' status reported.
    await createConfiguration(ns(), 'cfg', configurationSpec());
    for (const g of [FROZEN, HEALTHY]) await createGateway(ns(), g, cls, 'cfg');
    for (const g of [FROZEN, HEALTHY]) await waitFor(`${g} applied`, programmedAndApplied(ns(), g, '1'), { timeoutMs: 60000 });
    for (const g of [FROZEN, HEALTHY]) {
      await waitFor(`${g}'s Deployment status reported`, async () => (condition(await readGateway(ns(), g), LB_AVAILABLE)?.status === 'False' ? true : undefined), { timeoutMs: 60000 });
    }
    await waitFor('kube-state-metrics scraped: both Gateways applied', async () => {
      if (!k.alive()) throw new Error(`kube-state-metrics exited: ${tail(k)}`);
      const r = await p.query(`meridio2_gateway_status_condition{namespace="${ns()}", type="${CONDITION_APPLIED}", status="True"}`);
      return r.length === 2 ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 500 });
    await fn.quiet(3000);

    const watch = await watchGateways(ns());
    const ingress = await plane.proxy.localAddress(wiring.brokerUrl);
    const pings: Ping[] = [];
    let timer: NodeJS.Timeout | undefined;
    let edit = 0;
    let lift = 0;
    const keep = (end: number, series: RangeSeries[]): void => {
      recording = { ns: ns(), cls, start, edit: edit / 1000, pings: pings.map((q) => ({ ...q })), lift: lift / 1000, end, seen: watch.seen.slice(), logs: fn.logs.slice(), proxied: plane.proxy.requests.filter((r) => r.path.includes(`/${ns()}/`)), series };
      writeFileSync(join(work, 'recording.json'), JSON.stringify(recording, null, 1));
      if (process.env.SEED_TIMELINE_KEEP) writeFileSync(process.env.SEED_TIMELINE_KEEP, JSON.stringify(recording, null, 1));
    };
    try {
      const freeze = await freezeDeployments(ns(), `sllbr-${FROZEN}`, 'LB Deployments are frozen for maintenance', { only: `sllbr-${FROZEN}` });
      try {
        edit = Date.now();
        await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
        // The scaled resync schedule: a ping every PING_PERIOD_S from the edit, sent as the PingSource's adapter sends it.
        const source = `/apis/v1/namespaces/${ns()}/pingsources/meridio-2-resync`;
        const schedule = (n: number): void => {
          timer = setTimeout(() => {
            const event = pingEvent(source);
            const ping: Ping = { n, sentAt: Date.now(), id: event.id };
            pings.push(ping);
            const answered = (status: number): void => {
              ping.status = status;
              ping.answeredAt = Date.now();
            };
            void postWithoutTimeout(ingress, event).then(answered, () => answered(0));
            schedule(n + 1);
          }, edit + n * PING_PERIOD_S * 1000 - Date.now());
        };
        schedule(1);
        // FAILING_PINGS resyncs with the policy in place; the last one's delivery is over before the policy goes.
        await waitFor(`resync ${FAILING_PINGS} sent, and answered by the Broker ingress`, () => (pings.find((q) => q.n === FAILING_PINGS)?.answeredAt !== undefined ? true : undefined), { timeoutMs: (FAILING_PINGS + 2) * PING_PERIOD_S * 1000, intervalMs: 250 });
      } finally {
        lift = Date.now();
        await freeze.lift();
      }
      // Whatever delivers next applies the edit: the next resync at the latest.
      await waitFor(`${FROZEN} applied after the policy is lifted`, programmedAndApplied(ns(), FROZEN, '2'), { timeoutMs: 2 * PING_PERIOD_S * 1000, intervalMs: 250 });
      await waitFor('kube-state-metrics scraped: frozen applied', async () => ((await p.query(`meridio2_gateway_status_condition{namespace="${ns()}", name="${FROZEN}", type="${CONDITION_APPLIED}", status="True"}`)).length === 1 ? true : undefined), { timeoutMs: 30000, intervalMs: 500 });
      clearTimeout(timer);
      // Every ping sent is answered (the Broker ingress answers once its deliveries are over).
      await waitFor('every ping answered', () => (pings.every((q) => q.answeredAt !== undefined) ? true : undefined), { timeoutMs: 2 * PING_PERIOD_S * 1000, intervalMs: 500 });
      const settled = Date.now();
      await waitFor('a few more scrapes of the settled state', () => (Date.now() - settled > 5000 ? true : undefined), { timeoutMs: 10000, intervalMs: 500 });
    } finally {
      clearTimeout(timer);
      watch.stop();
      const end = Math.floor(Date.now() / 1000);
      const series: RangeSeries[] = [];
      for (const s of [`{__name__=~"meridio2_gateway_.*", namespace="${ns()}"}`, `{__name__=~"meridio2_gatewayclass_.*", gatewayclass="${cls}"}`, `up{job="${KSM_JOB}"}`]) {
        series.push(...(await p.queryRange(s, start, end, 1).catch(() => [])));
      }
      keep(end, series);
    }
    const rec = recording!;
    const delivery = shippedDelivery('meridio-2-resync');
    expect(delivery.deadLetterSink?.uri).toBe('/dead-letter');
    const chainMs = retryChainSeconds(delivery) * 1000;
    const handled = (l: LogLine): boolean => l.msg === 'event handled';
    const at = (l: LogLine): number => Number(l.time);

    // --- The frozen Gateway's GatewayConfigurationApplied, as the watch saw every write of it.
    const frozen = rec.seen.filter((s) => s.name === FROZEN).map((s) => ({ at: s.at, c: appliedOf(s) }));
    const failed = frozen.filter((x) => x.at >= edit && x.at < lift && x.c?.status === 'False');
    expect(failed.length).toBeGreaterThan(0);
    const firstFailure = failed[0]!;
    // False from the edit's first reconcile to the fix, never anything else in between.
    expect(frozen.filter((x) => x.at >= firstFailure.at && x.at < lift).map((x) => x.c?.status)).toEqual(failed.map(() => 'False'));
    // lastTransitionTime moves only with the status: the same through every write while False.
    expect(new Set(failed.map((x) => x.c?.lastTransitionTime))).toEqual(new Set([firstFailure.c?.lastTransitionTime]));
    expect(Math.abs(unix(firstFailure.c?.lastTransitionTime) - firstFailure.at / 1000)).toBeLessThan(2);
    // The reasons the real data plane produces while False (see docs/operations.md, "The seed's failure, minute by minute"): the write
    // refused, at every delivery; no dead letter of a reconcile request reaches the function, so no RetriesExhausted.
    expect([...new Set(failed.map((x) => x.c?.reason))]).toEqual(['ApplyFailed']);
    const fixed = frozen.find((x) => x.at >= lift && x.c?.status === 'True');
    expect(fixed?.c).toMatchObject({ status: 'True', reason: 'Applied' });

    // --- Each failing resync: the resync Trigger delivers the ping retry + 1 times, each answered 503
    // (the Gateway's write refused), spaced by the shipped backoff; then the dead letter, about the
    // whole chain after the first delivery, which the function acknowledges without recording it.
    const failing = rec.pings.filter((q) => q.sentAt < lift);
    expect(failing.length).toBeGreaterThanOrEqual(FAILING_PINGS);
    for (const q of failing) {
      const lines = rec.logs.filter((l) => handled(l) && l.eventId === q.id);
      const attempts = lines.filter((l) => l.outcome !== 'ignored');
      expect(attempts.map((l) => `${l.status} ${l.outcome} ${l.gateway}`)).toEqual(Array(delivery.retry + 1).fill(`503 write-failed ${ns()}/${FROZEN}`));
      const times = attempts.map(at);
      times.slice(1).forEach((t, n) => {
        const gap = t - times[n]!;
        const expected = isoSeconds(delivery.backoffDelay) * 1000 * 2 ** n;
        expect(gap).toBeGreaterThanOrEqual(expected * 0.9);
        expect(gap).toBeLessThan(expected + 5000);
      });
      const dead = lines.filter((l) => l.outcome === 'ignored');
      expect(dead).toHaveLength(1);
      expect(dead[0]?.detail).toMatch(/^dead-lettered event of type dev\.knative\.sources\.ping/);
      expect(at(dead[0]!) - times[0]!).toBeGreaterThanOrEqual(chainMs * 0.95);
      expect(at(dead[0]!) - times[0]!).toBeLessThan(chainMs + 15000);
      // The in-memory channel answers the ingress, and the ingress the sender, once the dead letter is in.
      expect(q.answeredAt!).toBeGreaterThanOrEqual(at(dead[0]!));
      expect(q.answeredAt! - q.sentAt).toBeLessThan(PING_PERIOD_S * 1000);
    }
    // No reconcile request was dead-lettered to the function: the function gives up on each post
    // to the Broker after its fan-out timeout, before the delivery's retries end, and the Broker
    // then stops them (the sender's abort cancels the ingress's send and the channel's retries).
    expect(rec.logs.filter((l) => handled(l) && String(l.outcome).startsWith('dead-letter:'))).toEqual([]);
    const edits = rec.logs.filter((l) => handled(l) && l.outcome === 'fan-out-failed' && typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/cfg'));
    expect(edits.length).toBeGreaterThan(0);
    expect(rec.proxied.some((r) => r.host.startsWith('broker-ingress.') && r.ceType === RECONCILE_TYPE && r.aborted === true)).toBe(true);

    // --- kube-state-metrics exposed the same: the lastTransitionTime gauge of the False condition
    // constant at the first failure, the reason ApplyFailed, from the edit until the fix.
    const ltt = rec.series.filter((s) => s.metric.__name__ === 'meridio2_gateway_status_condition_last_transition_time' && s.metric.name === FROZEN && s.metric.type === CONDITION_APPLIED && s.metric.status === 'False');
    expect(ltt).toHaveLength(1);
    expect(new Set(ltt[0]!.values.map(([, v]) => Number(v)))).toEqual(new Set([unix(firstFailure.c?.lastTransitionTime)]));
    const reasons = rec.series.filter((s) => s.metric.__name__ === 'meridio2_gateway_status_condition' && s.metric.name === FROZEN && s.metric.type === CONDITION_APPLIED && s.metric.status === 'False');
    expect(reasons.map((s) => s.metric.reason)).toEqual(['ApplyFailed']);
    const shown = reasons[0]!.values.map(([t]) => t);
    expect(shown[0]! - firstFailure.at / 1000).toBeLessThan(5);
    expect(Math.max(...shown)).toBeLessThan(fixed!.at / 1000 + 5);
  }, 30 * 60 * 1000);

  /** The recorded phases (Unix seconds), from the recording. */
  const phasesOf = (rec: Recording): Phases => {
    const sec = (ms: number): number => Math.round(ms / 1000);
    const failing = rec.pings.filter((q) => q.sentAt < rec.lift * 1000);
    // What applied it: the first delivery after the lift that applied it (a ping, or any other event's).
    const cause = rec.logs.find((l) => l.msg === 'event handled' && l.gateway === `${rec.ns}/${FROZEN}` && l.outcome === 'applied' && Number(l.time) >= rec.lift * 1000);
    if (!cause) throw new Error('no delivery after the lift applied the edit');
    const ping = cause.type === PING_TYPE ? rec.pings.find((q) => q.id === cause.eventId) : undefined;
    // The recording starts with the first scrape of the Gateways.
    const first = Math.min(...rec.series.filter((x) => x.metric.namespace === rec.ns).map((x) => Math.round(x.values[0]?.[0] ?? Infinity)));
    return { start: Math.max(rec.start, first), edit: sec(rec.edit * 1000), pings: failing.map((q) => sec(q.sentAt)), lift: sec(rec.lift * 1000), fix: ping ? sec(ping.sentAt) : sec(rec.lift * 1000), fixByPing: ping !== undefined, end: rec.end };
  };

  /** Runs promtool on a generated test file; its exit code and output. */
  const promtoolTest = async (name: string, doc: object): Promise<{ code: number; out: string }> => {
    const file = join(work, `${name}.promtool.yaml`);
    writeFileSync(file, dump(doc, { lineWidth: -1, noRefs: true }));
    return run(promtool, ['test', 'rules', file], { maxBuffer: 64 * 1024 * 1024 }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? -1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
    );
  };

  interface Replay {
    plan: ReplayPlan;
    input: ReplaySeries[];
    /** Replay seconds: the frozen Gateway's lastTransitionTime of False, when the policy was lifted, when kube-state-metrics last showed it False. */
    failedSince: number;
    lifted: number;
    lastFalse: number;
  }

  const replayOf = (rec: Recording, fixMinute: number): Replay => {
    const phases = phasesOf(rec);
    const plan = replayPlan(phases, fixMinute, REPLAY_MINUTES);
    const input = replaySeries(rec, phases, plan);
    const ltt = input.find((s) => s.labels.__name__ === 'meridio2_gateway_status_condition_last_transition_time' && s.labels.name === FROZEN && s.labels.type === CONDITION_APPLIED && s.labels.status === 'False');
    if (!ltt) throw new Error('the replay has no lastTransitionTime of the frozen Gateway\'s False condition');
    const present = ltt.values.map((v, i) => (v === undefined ? -1 : i)).filter((i) => i >= 0);
    return { plan, input, failedSince: ltt.values[present[0]!]!, lifted: plan.lift, lastFalse: present.at(-1)! * REPLAY_STEP_S };
  };

  const isFrozenFalse = (s: ReplaySeries): boolean => s.labels.__name__ === 'meridio2_gateway_status_condition' && s.labels.name === FROZEN && s.labels.type === CONDITION_APPLIED && s.labels.status === 'False';

  /**
   * The recorded replay with the reasons the design documents instead of the
   * recorded ones (docs/operations.md: "after about a minute of retries the
   * reason becomes RetriesExhausted"): ApplyFailed at each delivery that
   * starts a chain (the edit, each resync), RetriesExhausted once that chain
   * is dead-lettered, `deadAfter` seconds later (the recorded resync's chain:
   * ping sent → its dead letter), until the next one. Status and
   * lastTransitionTime stay as recorded. Not what the recorded Broker does
   * (it dead-letters no reconcile request): what the rules must page on too.
   */
  const alternated = (r: Replay, deadAfter: number): Replay => {
    const base = r.input.find(isFrozenFalse);
    if (!base) throw new Error('no False condition in the replay');
    const anchors = [r.plan.edit, ...r.plan.failing];
    const reasonOf = (t: number): string => {
      const a = anchors.filter((x) => x <= t).at(-1);
      return a !== undefined && t - a >= deadAfter ? 'RetriesExhausted' : 'ApplyFailed';
    };
    const split = (reason: string): ReplaySeries => ({ labels: { ...base.labels, reason }, values: base.values.map((v, i) => (v !== undefined && reasonOf(i * REPLAY_STEP_S) === reason ? v : undefined)) });
    return { ...r, input: [...r.input.filter((s) => !isFrozenFalse(s)), split('ApplyFailed'), split('RetriesExhausted')] };
  };

  /** The reasons of the frozen Gateway's False condition at a replay step, as its annotations' query reads them. */
  const reasonsAt = (input: ReplaySeries[], i: number): string[] => input
    .filter((s) => isFrozenFalse(s) && s.values[i] !== undefined)
    .map((s) => s.labels.reason ?? '')
    .sort();

  const inputSeries = (input: ReplaySeries[]): Array<{ series: string; values: string }> => input.map((s) => ({ series: seriesSelector(s.labels), values: promtoolValues(s.values) }));

  /**
   * What the shipped rules must do on a replay, at every evaluation: the
   * seed's alert quiet until its threshold has passed since the condition
   * turned False, then firing at every evaluation, its annotations naming
   * the reason of that moment, until kube-state-metrics shows the fix;
   * firing on for keep_firing_for with the last annotations, then quiet.
   * No other Gateway alert, ever.
   */
  const expectations = (rec: Recording, r: Replay): { tests: object[]; firstFiring: number | undefined; resolved: number | undefined } => {
    const rules = shippedRules();
    const rule = rules.find((x) => x.alert === NOT_APPLIED);
    if (!rule) throw new Error(`${RULE_FILE}: no ${NOT_APPLIED}`);
    const threshold = Number(/> (\d+) unless/.exec(rule.expr)?.[1]);
    const keep = rule.keep_firing_for ? seconds(rule.keep_firing_for) : 0;
    const others = rules.filter((x) => x.alert !== NOT_APPLIED && x.group === rule.group);
    const labels = { ...rule.labels, namespace: rec.ns, name: FROZEN, gatewayclass: rec.cls };
    const tests: object[] = [];
    let firstFiring: number | undefined;
    let resolved: number | undefined;
    let last: Labels | undefined;
    const steps = r.plan.end / REPLAY_STEP_S;
    for (let i = 0; i <= steps; i++) {
      const t = i * REPLAY_STEP_S;
      const reasons = reasonsAt(r.input, i);
      const failing = reasons.length > 0 && t - r.failedSince > threshold;
      let exp: object[] = [];
      if (failing) {
        firstFiring ??= t;
        last = Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, render(v, labels, t - r.failedSince, reasons)]));
        exp = [{ exp_labels: labels, exp_annotations: last }];
      } else if (last && t > r.lastFalse && t - (r.lastFalse + REPLAY_STEP_S) < keep) {
        exp = [{ exp_labels: labels, exp_annotations: last }];
      } else if (last && resolved === undefined) {
        resolved = t;
      }
      tests.push({ eval_time: `${t}s`, alertname: NOT_APPLIED, exp_alerts: exp });
      for (const o of others) tests.push({ eval_time: `${t}s`, alertname: o.alert, exp_alerts: [] });
    }
    return { tests, firstFiring, resolved };
  };

  const promtoolDoc = (name: string, input: ReplaySeries[], tests: object[]): object => ({
    rule_files: [repoPath(RULE_FILE)],
    evaluation_interval: `${REPLAY_STEP_S}s`,
    tests: [{ name, interval: `${REPLAY_STEP_S}s`, input_series: inputSeries(input), alert_rule_test: tests }],
  });

  it(`replays it on the shipped ${SHIPPED_RESYNC_SECONDS / 60}-minute schedule under promtool with the shipped rules: quiet for 15 minutes, then firing at every evaluation until the fix after minute ${REPLAY_FIX_MINUTE}, then resolved; no other Gateway alert`, async () => {
    if (!recording) throw new Error('no recording (the recording test failed)');
    const r = replayOf(recording, REPLAY_FIX_MINUTE);
    const { tests, firstFiring, resolved } = expectations(recording, r);
    // What the expectations say, against the requirements.
    const rule = shippedRules().find((x) => x.alert === NOT_APPLIED)!;
    const threshold = Number(/> (\d+) unless/.exec(rule.expr)?.[1]);
    const keep = seconds(rule.keep_firing_for ?? '0s');
    expect(firstFiring).toBeDefined();
    // Counted from the failure: quiet for 15 minutes, paging within 20 (at the first evaluation past the threshold).
    expect(firstFiring! - r.failedSince).toBeGreaterThan(15 * 60);
    expect(firstFiring! - r.failedSince).toBeLessThanOrEqual(Math.min(20 * 60, threshold + REPLAY_STEP_S));
    expect(resolved).toBeDefined();
    expect(resolved!).toBeLessThanOrEqual(r.lifted + SHIPPED_RESYNC_SECONDS + keep + REPLAY_STEP_S);
    // Every reason the recording shows while failing is named by the alert at some evaluation.
    const named = new Set(tests.flatMap((x) => (x as { exp_alerts: Array<{ exp_annotations: Labels }> }).exp_alerts.map((a) => a.exp_annotations.summary)));
    const reasons = new Set(r.input.filter((s) => s.labels.__name__ === 'meridio2_gateway_status_condition' && s.labels.name === FROZEN && s.labels.status === 'False' && s.labels.type === CONDITION_APPLIED).map((s) => s.labels.reason));
    for (const reason of reasons) expect([...named].some((x) => x?.includes(`(${reason})`))).toBe(true);
    const result = await promtoolTest('replay', promtoolDoc(`the seed, recorded, on the shipped schedule, lifted after the resync of minute ${REPLAY_FIX_MINUTE}`, r.input, tests));
    expect(result).toEqual({ code: 0, out: expect.stringContaining('SUCCESS') });
  }, 120000);

  it(`the documented alternation (ApplyFailed at each resync, RetriesExhausted once its delivery is dead-lettered), laid on the recorded timeline: the alert stays firing through every change of reason, each named in its annotations`, async () => {
    if (!recording) throw new Error('no recording (the recording test failed)');
    const deadLetters = recording.pings.filter((q) => q.sentAt < recording!.lift * 1000).map((q) => {
      const dead = recording!.logs.find((l) => l.msg === 'event handled' && l.eventId === q.id && l.outcome === 'ignored');
      if (!dead) throw new Error(`ping ${q.n}: no dead letter recorded`);
      return (Number(dead.time) - q.sentAt) / 1000;
    });
    const deadAfter = Math.round(Math.max(...deadLetters));
    expect(deadAfter).toBeGreaterThanOrEqual(retryChainSeconds(shippedDelivery('meridio-2-resync')));
    const r = alternated(replayOf(recording, REPLAY_FIX_MINUTE), deadAfter);
    const { tests, firstFiring } = expectations(recording, r);
    expect(firstFiring! - r.failedSince).toBeLessThanOrEqual(20 * 60);
    const summaries = tests.flatMap((x) => (x as { exp_alerts: Array<{ exp_annotations: Labels }> }).exp_alerts.map((a) => a.exp_annotations.summary ?? ''));
    // Firing at every evaluation from the first to the fix, through both reasons, many times over.
    const changes = summaries.filter((x, i) => i > 0 && x !== summaries[i - 1]).length;
    // Two changes a resync period (ApplyFailed at the resync, RetriesExhausted once it is dead-lettered), from the first firing to the fix.
    expect(changes).toBeGreaterThanOrEqual(2 * Math.floor((REPLAY_FIX_MINUTE * 60 - firstFiring!) / SHIPPED_RESYNC_SECONDS) - 2);
    for (const reason of ['ApplyFailed', 'RetriesExhausted']) expect(summaries.some((x) => x.includes(`(${reason})`))).toBe(true);
    const result = await promtoolTest('alternation', promtoolDoc(`the seed with the documented alternation, lifted after the resync of minute ${REPLAY_FIX_MINUTE}`, r.input, tests));
    expect(result).toEqual({ code: 0, out: expect.stringContaining('SUCCESS') });
  }, 120000);

  it(`control: the same replay with the policy lifted after the resync of minute ${REPLAY_CONTROL_FIX_MINUTE} (applied at the next, under 15 minutes after the edit) never pages, and the main expectations fail on it (the replay can fail)`, async () => {
    if (!recording) throw new Error('no recording (the recording test failed)');
    const main = replayOf(recording, REPLAY_FIX_MINUTE);
    const control = replayOf(recording, REPLAY_CONTROL_FIX_MINUTE);
    const quiet = expectations(recording, control);
    expect(quiet.firstFiring).toBeUndefined();
    const ok = await promtoolTest('control', promtoolDoc(`the seed, lifted after the resync of minute ${REPLAY_CONTROL_FIX_MINUTE}: quiet`, control.input, quiet.tests));
    expect(ok).toEqual({ code: 0, out: expect.stringContaining('SUCCESS') });
    const wrong = await promtoolTest('control-main-expectations', promtoolDoc(`the seed, lifted after the resync of minute ${REPLAY_CONTROL_FIX_MINUTE}, held to the expectations of the lift after minute ${REPLAY_FIX_MINUTE}`, control.input, expectations(recording, main).tests));
    expect(wrong.code).not.toBe(0);
    expect(wrong.out).toContain(NOT_APPLIED);
  }, 120000);
});
