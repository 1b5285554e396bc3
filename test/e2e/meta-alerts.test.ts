import { ksmIdentity, startKubeStateMetrics, type KsmIdentity } from '../support/kube-state-metrics.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { pingEvent } from '../../events/outgoing.js';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { repoPath } from '../../tools/harness/repo-root.js';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { alerts, FUNCTION_JOB, KSM_JOB, RESYNC_GATEWAYS_METRIC, RESYNC_HANDLED_METRIC } from '../../tools/monitoring/alerts.mjs';
import { MONITORING_DIR } from '../../tools/monitoring/files.mjs';
import { ruleFile } from '../../tools/monitoring/rules.mjs';
import { configurationSpec, createConfiguration, createGateway } from '../support/fixtures.js';
import { tail, type GoProcess } from '../support/go-process.js';
import { alertGone, alertIn, alertsNamed, holdsWithout, scalarOf } from '../support/prometheus-alerts.js';
import { startPrometheus } from '../support/telemetry-backends.js';
import { useWorld } from '../support/world.js';

// The meta-alerts, which say when the other alerts cannot fire, in a real
// Prometheus evaluating the rules of tools/monitoring/alerts.mts, fed by a
// real kube-state-metrics (its Go module, the shipped CustomResourceState
// configuration, the shipped ServiceAccount role, against the test API
// server) and by the shipped function (startup snapshot) over OTLP.
//
// These tests do NOT prove paging on the real timeline. Two substitutions,
// said here:
// - the rules are rendered for a resync period of RESYNC_SECONDS (10 s)
//   instead of the shipped PingSource schedule, and a report slack of
//   REPORT_SLACK_SECONDS (2 s, for the 1 s export interval below) instead of
//   120 s (alerts({ resyncSeconds, reportSlackSeconds })): "no resync for two
//   periods and the slack" is 22 s, and the series-missing window 1m;
// - every non-zero `for:` is 5 s (ruleFile(..., { forOverride: '5s' }))
//   instead of 10 minutes.
// The expressions are otherwise the shipped ones. The pings are posted by
// the test (what PingSource → Broker → Trigger delivers), every
// RESYNC_SECONDS as the scaled schedule would. While the function handles
// pings it runs with OTEL_METRIC_EXPORT_INTERVAL=1000 (the gauges otherwise
// reach Prometheus only on the 60 s export or the flush on SIGTERM); it is
// then stopped, as a function scaled to zero is, and flushes on exit.
// Prometheus scrapes and evaluates every second.

const RESYNC_SECONDS = 10;
const REPORT_SLACK_SECONDS = 2;
const SILENT_AFTER_SECONDS = 2 * RESYNC_SECONDS + REPORT_SLACK_SECONDS;
const SHORT_FOR = '5s';
const RULES = dump(ruleFile(alerts({ resyncSeconds: RESYNC_SECONDS, reportSlackSeconds: REPORT_SLACK_SECONDS }), { forOverride: SHORT_FOR }));
const KSM_DOWN = 'MeridioKubeStateMetricsDown';
const PATH_BROKEN = 'MeridioEventPathBroken';
const SERIES_MISSING = 'MeridioGatewaySeriesMissing';
const KSM_CONFIG = `${MONITORING_DIR}/custom-resource-state.yaml`;
/** Longer than `for:` plus a few evaluations: a pending alert would have fired by then. */
const HOLD_MS = 10000;

interface CustomResourceStateConfig {
  spec: { resources: Array<{ groupVersionKind: { group: string; version: string; kind: string } }> };
}

/**
 * The shipped configuration with the Gateways' version changed to one the
 * API server does not serve (one written for an old Gateway API): the
 * GatewayClasses are still exposed, the Gateways are not.
 */
function configForAnotherVersion(dir: string): string {
  const config = load(readFileSync(repoPath(KSM_CONFIG), 'utf8')) as CustomResourceStateConfig;
  const gateways = config.spec.resources.find((r) => r.groupVersionKind.kind === 'Gateway');
  if (!gateways) throw new Error(`${KSM_CONFIG}: no Gateway resource`);
  gateways.groupVersionKind.version = 'v1alpha2';
  const file = join(dir, 'custom-resource-state-v1alpha2.yaml');
  writeFileSync(file, dump(config));
  return file;
}

describe('meta-alerts: kube-state-metrics down, the event path broken, Gateway series missing (real kube-state-metrics, Prometheus and function; scaled resync period and for:)', () => {
  const w = useWorld('meta');
  let ksmBinary: string;
  let dir: string;
  const running: Array<{ stop(): Promise<void> }> = [];
  const started = <T extends { stop(): Promise<void> }>(x: T): T => {
    running.push(x);
    return x;
  };

  beforeAll(async () => {
    ksmBinary = (await ensureGoTool('kube-state-metrics')).binary;
    await ensureGoTool('prometheus');
    dir = mkdtempSync(join(tmpdir(), 'meta-alerts-'));
  }, 45 * 60 * 1000);

  afterEach(async () => {
    // Last started, first stopped; a process already stopped returns at once.
    for (const x of running.splice(0).reverse()) await x.stop();
  }, 60000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The test's kube-state-metrics identity (one per test namespace). */
  let identityOf: { ns: string; identity: KsmIdentity } | undefined;
  async function identity(): Promise<KsmIdentity> {
    if (identityOf?.ns !== w.ns()) identityOf = { ns: w.ns(), identity: await ksmIdentity(w.ns()) };
    return identityOf.identity;
  }

  /** kube-state-metrics as its shipped identity, on `port`. */
  async function startKsm(port: number, configFile: string): Promise<GoProcess> {
    return started(await startKubeStateMetrics(ksmBinary, await identity(), port, configFile));
  }

  it(`${KSM_DOWN}: quiet while kube-state-metrics is scraped under job ${KSM_JOB}; fires from up == 0 once it stops`, async () => {
    const port = await freePort();
    const ksm = await startKsm(port, repoPath(KSM_CONFIG));
    const p = started(await startPrometheus({ scrape: [{ job: KSM_JOB, target: `127.0.0.1:${port}` }], rules: RULES, intervalSeconds: 1 }));
    const up = `up{job="${KSM_JOB}"}`;
    await waitFor('kube-state-metrics scraped (up 1) and serving the GatewayClasses', async () => {
      if (!ksm.alive()) throw new Error(`kube-state-metrics exited: ${tail(ksm)}`);
      return (await scalarOf(p, up)) === 1 && (await p.query(`meridio2_gatewayclass_info{gatewayclass="${w.cls()}"}`)).length === 1 ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 500 });
    // Before the first scrape absent(up) held, briefly: let that go.
    await alertGone(p, KSM_DOWN, 30000);
    await holdsWithout(p, KSM_DOWN, HOLD_MS);

    await ksm.stop();
    await waitFor('the failed scrape (up 0)', async () => ((await scalarOf(p, up)) === 0 ? true : undefined), { timeoutMs: 30000, intervalMs: 250 });
    const stoppedAt = Date.now();
    const pending = await alertIn(p, KSM_DOWN, 'pending', 30000);
    expect(pending.map((a) => a.labels)).toEqual([{ alertname: KSM_DOWN, severity: 'critical', job: KSM_JOB, instance: `127.0.0.1:${port}` }]);
    const firing = await alertIn(p, KSM_DOWN, 'firing', 60000);
    // From the up == 0 branch (it keeps the target's instance; absent() has only the job).
    expect(firing.map((a) => a.labels)).toEqual([{ alertname: KSM_DOWN, severity: 'critical', job: KSM_JOB, instance: `127.0.0.1:${port}` }]);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(4000);
    expect(firing[0]?.annotations.summary).toBe('kube-state-metrics of the Gateways is not scraped: the Gateway alerts cannot fire');
  });

  it(`${KSM_DOWN}: fires from absent() when no ${KSM_JOB} target is scraped at all`, async () => {
    const p = started(await startPrometheus({ rules: RULES, intervalSeconds: 1 }));
    const firing = await alertIn(p, KSM_DOWN, 'firing', 60000);
    expect(firing.map((a) => a.labels)).toEqual([{ alertname: KSM_DOWN, severity: 'critical', job: KSM_JOB }]);
  });

  it(`${PATH_BROKEN}: fires while no resync was ever handled, is quiet while pings are handled every period, fires two periods after they stop (function stopped)`, async () => {
    const p = started(await startPrometheus({ rules: RULES, intervalSeconds: 1 }));
    const handled = `${RESYNC_HANDLED_METRIC}{job="${FUNCTION_JOB}"}`;

    // No resync reported in the look-back: the absent_over_time() branch.
    const never = await alertIn(p, PATH_BROKEN, 'firing', 30000);
    expect(never.map((a) => a.labels)).toEqual([{ alertname: PATH_BROKEN, severity: 'critical', job: FUNCTION_JOB }]);

    const pod = `fn-path-${w.ns()}`;
    const f: FunctionProcess = started(await startFunctionProcess({
      kubeconfig: w.r().kubeconfig,
      namespaces: [w.ns()],
      env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: p.otlpMetricsUrl, OTEL_METRIC_EXPORT_INTERVAL: '1000', POD_NAME: pod },
    }));
    // The scaled PingSource: a ping whenever a period has passed since the last one.
    let last: { posted: number; answered: number } | undefined;
    let pings = 0;
    const pingIfDue = async (): Promise<void> => {
      if (last && Date.now() - last.posted < RESYNC_SECONDS * 1000) return;
      const posted = Date.now();
      const res = await f.post(pingEvent());
      expect(res.status).toBeLessThan(300);
      last = { posted, answered: Date.now() };
      pings++;
    };
    await waitFor('the first handled resync in Prometheus, and the alert resolved', async () => {
      await pingIfDue();
      return (await p.query(handled)).length > 0 && (await alertsNamed(p, PATH_BROKEN)).length === 0 ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 500 });

    // The names Prometheus's OTLP receiver gives the two gauges are the ones the rules read.
    const names = (await p.query(`{__name__=~"controller_resync.*", job="${FUNCTION_JOB}", instance="${pod}"}`)).map((r) => r.metric.__name__).sort();
    expect(names).toEqual([RESYNC_GATEWAYS_METRIC, RESYNC_HANDLED_METRIC].sort());

    // Three periods of pings, one per period: never pending, never firing.
    await holdsWithout(p, PATH_BROKEN, 3 * RESYNC_SECONDS * 1000, pingIfDue);
    expect(pings).toBeGreaterThanOrEqual(4);

    // The pings stop, and the function goes (scaled to zero): its last export is the flush.
    const lastPing = last!;
    await f.stop();
    const value = await scalarOf(p, `max_over_time(${handled}[3h])`);
    // The gauge holds when the last ping was handled (Unix seconds).
    expect(value).toBeGreaterThanOrEqual(lastPing.posted / 1000 - 0.001);
    expect(value).toBeLessThanOrEqual(lastPing.answered / 1000 + 0.001);
    const firing = await alertIn(p, PATH_BROKEN, 'firing', (SILENT_AFTER_SECONDS + 60) * 1000);
    expect(firing.map((a) => a.labels)).toEqual([{ alertname: PATH_BROKEN, severity: 'critical', job: FUNCTION_JOB }]);
    // Not before two periods and the slack of silence: the time() - last handled branch.
    expect(Date.now() - lastPing.posted).toBeGreaterThan(SILENT_AFTER_SECONDS * 1000);
    expect(Number(await scalarOf(p, `time() - max by (job) (max_over_time(${handled}[3h]))`))).toBeGreaterThan(SILENT_AFTER_SECONDS);
    expect(firing[0]?.annotations.summary).toBe('No resync has reached the function for more than 1 minute');
  });

  it(`${SERIES_MISSING}: quiet while kube-state-metrics exposes the Gateways the function's resync reports; fires when its configuration exposes none of them`, async () => {
    const ns = w.ns();
    const port = await freePort();
    let ksm = await startKsm(port, repoPath(KSM_CONFIG));
    const p = started(await startPrometheus({ scrape: [{ job: KSM_JOB, target: `127.0.0.1:${port}` }], rules: RULES, intervalSeconds: 1 }));
    await createConfiguration(ns, 'cfg', configurationSpec());
    for (const g of ['a', 'b']) await createGateway(ns, g, w.cls(), 'cfg');
    const info = `meridio2_gateway_info{namespace="${ns}"}`;
    await waitFor('kube-state-metrics serving both Gateways', async () => {
      if (!ksm.alive()) throw new Error(`kube-state-metrics exited: ${tail(ksm)}`);
      return (await p.query(info)).length === 2 ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 500 });

    // The function's resync reports the two Gateways of its class.
    const pod = `fn-series-${ns}`;
    const f = started(await startFunctionProcess({
      kubeconfig: w.r().kubeconfig,
      namespaces: [ns],
      env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: p.otlpMetricsUrl, OTEL_METRIC_EXPORT_INTERVAL: '1000', POD_NAME: pod },
    }));
    expect((await f.post(pingEvent())).status).toBeLessThan(300);
    const reported = `${RESYNC_GATEWAYS_METRIC}{job="${FUNCTION_JOB}", instance="${pod}"}`;
    await waitFor('the resync\'s Gateway count in Prometheus', async () => ((await scalarOf(p, reported)) === 2 ? true : undefined), { timeoutMs: 30000, intervalMs: 250 });
    await holdsWithout(p, SERIES_MISSING, HOLD_MS);

    // The same kube-state-metrics, on the same target, with a configuration
    // for a Gateway version the API server does not serve.
    await ksm.stop();
    ksm = await startKsm(port, configForAnotherVersion(dir));
    await waitFor('kube-state-metrics scraped again: the GatewayClass exposed, no Gateway', async () => {
      if (!ksm.alive()) throw new Error(`kube-state-metrics exited: ${tail(ksm)}`);
      return (await scalarOf(p, `up{job="${KSM_JOB}"}`)) === 1 && (await p.query(`meridio2_gatewayclass_info{gatewayclass="${w.cls()}"}`)).length === 1 && (await p.query(info)).length === 0 ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 500 });
    const firing = await alertIn(p, SERIES_MISSING, 'firing', 60000);
    expect(firing.map((a) => a.labels)).toEqual([{ alertname: SERIES_MISSING, severity: 'critical', job: FUNCTION_JOB }]);
    expect(firing[0]?.annotations.description).toContain(`${FUNCTION_JOB} reconciled 2 Gateways of its classes at its last resync`);
  });
});
