import { ksmIdentity, startKubeStateMetrics } from '../support/kube-state-metrics.js';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { dump } from 'js-yaml';
import { deniedByAuthorizer, readEvents, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { shippedClusterRole } from '../../tools/harness/service-account-identity.js';
import { ensureGoTool } from '../../tools/go-tools.mjs';
import { CONDITION_APPLIED, KSM_JOB } from '../../tools/monitoring/alerts.mjs';
import { alerts } from '../../tools/monitoring/alerts.mjs';
import { SHIPPED_RESYNC_SECONDS } from '../../tools/monitoring/shipped-alerts.mjs';
import { dashboard, dashboardQueries } from '../../tools/monitoring/dashboard.mjs';
import { MONITORING_DIR } from '../../tools/monitoring/files.mjs';
import { ruleFile } from '../../tools/monitoring/rules.mjs';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { apiServerEvent, pingEvent, reconcileEvent } from '../../events/outgoing.js';
import { adminConfig, clusterInfo, useNamespace } from '../support/cluster.js';
import { APPLIED, condition, configurationSpec, createClass, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from '../support/fixtures.js';
import { tail, type GoProcess } from '../support/go-process.js';
import { freezeDeployments } from '../support/policies.js';
import { grantedKeys, usedKeys } from '../support/rbac-usage.js';
import { controllerIdentity } from '../support/reconciler.js';
import { startPrometheus, type PrometheusProcess } from '../support/telemetry-backends.js';

// Paging on the seed's failure, with real parts: kube-state-metrics (built
// from its Go module) runs with the shipped CustomResourceState
// configuration as the shipped ServiceAccount role, against the test API
// server; a real Prometheus scrapes it, loads the shipped alert rules and
// receives the function's OTLP metrics; the shipped function (startup
// snapshot) reconciles, driven by the CloudEvents the ApiServerSource would
// send (posted directly: the event path has its own tests).
//
// The rules are the shipped ones with two substitutions, said here: every
// `for:` and `keep_firing_for:` is 5 s instead of minutes, and MeridioGatewayConfigurationNotApplied
// waits 5 s from the condition's lastTransitionTime instead of 15 minutes, so
// that the test waits seconds; it does not claim to prove paging on the real
// timeline (test/e2e/seed-timeline.test.ts does, at the shipped durations).
// Prometheus scrapes and evaluates every second.

const KSM_RBAC_FILE = `${MONITORING_DIR}/kube-state-metrics-rbac.yaml`;
const NOT_APPLIED = 'MeridioGatewayConfigurationNotApplied';
const OTHER_CONTROLLER = 'example.com/other-gateway-controller';
const SHORT_FOR = '5s';
// Grafana's $__rate_interval, for a 1 s scrape and a 1 s step.
const RATE_INTERVAL = '30s';

describe('alerts on the Gateways\' state: real kube-state-metrics and Prometheus with the shipped configuration, RBAC, rules and dashboard', () => {
  const ns = useNamespace('mon');
  let prometheus: PrometheusProcess | undefined;
  let ksm: GoProcess | undefined;
  let fn: FunctionProcess | undefined;
  let ksmBinary: string;

  beforeAll(async () => {
    ksmBinary = (await ensureGoTool('kube-state-metrics')).binary;
  }, 45 * 60 * 1000);

  afterAll(async () => {
    await fn?.stop();
    await ksm?.stop();
    await prometheus?.stop();
  }, 60000);

  it('a denied Deployment write fires the configuration-not-applied alert for that Gateway only, never for another controller\'s Gateway; recovery resolves it; every dashboard query returns data', async () => {
    const started = Math.floor(Date.now() / 1000);
    const auditFrom = readEvents(clusterInfo().auditLog).end;
    const custom = adminConfig().makeApiClient(CustomObjectsApi);

    // --- kube-state-metrics as its shipped identity, with the shipped configuration.
    const identity = await ksmIdentity(ns());
    const port = await freePort();
    ksm = await startKubeStateMetrics(ksmBinary, identity, port);
    const k = ksm;
    prometheus = await startPrometheus({ scrape: [{ job: KSM_JOB, target: `127.0.0.1:${port}` }], rules: dump(ruleFile(alerts({ resyncSeconds: SHIPPED_RESYNC_SECONDS, notAppliedAfter: SHORT_FOR }), { forOverride: SHORT_FOR })), intervalSeconds: 1 });
    const p = prometheus;

    // --- Two Gateways of this controller sharing one GatewayConfiguration,
    // and one of another controller's class.
    const cls = `meridio-${ns()}`;
    const otherClass = `other-${ns()}`;
    await createClass(cls);
    await createClass(otherClass, OTHER_CONTROLLER);
    await createConfiguration(ns(), 'shared', configurationSpec());
    const controller = await controllerIdentity(ns());
    fn = await startFunctionProcess({
      kubeconfig: controller.kubeconfig,
      namespaces: [ns()],
      env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: p.otlpMetricsUrl, OTEL_METRIC_EXPORT_INTERVAL: '1000', POD_NAME: `fn-${ns()}` },
    });
    const f = fn;
    for (const g of ['frozen', 'healthy']) {
      await createGateway(ns(), g, cls, 'shared');
      expect((await f.post(reconcileEvent({ namespace: ns(), name: g }))).status).toBeLessThan(300);
      await waitFor(`${g} applied`, programmedAndApplied(ns(), g, '1'), { timeoutMs: 30000 });
    }
    // The other controller's Gateway, in the very state that pages for ours.
    const foreign = await createGateway(ns(), 'foreign', otherClass, 'shared');
    const now = new Date().toISOString();
    const cond = (type: string, status: string, reason: string): object => ({ type, status, reason, message: 'set by the other controller', lastTransitionTime: now, observedGeneration: 1 });
    await custom.replaceNamespacedCustomObjectStatus({
      group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace: ns(), name: 'foreign',
      body: { ...foreign, status: { conditions: [cond('Accepted', 'True', 'Accepted'), cond('Programmed', 'True', 'Programmed'), cond(CONDITION_APPLIED, 'False', 'ApplyFailed')] } },
    });

    // kube-state-metrics exposes all three through Prometheus, the foreign
    // one in the same state the alert looks for.
    const appliedFalse = `meridio2_gateway_status_condition{namespace="${ns()}", type="${CONDITION_APPLIED}", status="False"}`;
    await waitFor('kube-state-metrics scraped: both classes and the foreign Gateway\'s ApplyFailed', async () => {
      if (!k.alive()) throw new Error(`kube-state-metrics exited: ${tail(k)}`);
      const classes = await p.query(`meridio2_gatewayclass_info{gatewayclass=~"${cls}|${otherClass}"}`);
      const failed = await p.query(appliedFalse);
      return classes.length === 2 && failed.some((r) => r.metric.name === 'foreign') ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 500 });

    // --- The seed scenario: a policy refuses changes to frozen's Deployment
    // only, then the shared GatewayConfiguration is edited.
    const freeze = await freezeDeployments(ns(), 'sllbr-frozen', 'frozen for maintenance', { only: 'sllbr-frozen' });
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'shared', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      const edited = (await custom.getNamespacedCustomObject({ ...GATEWAY_CONFIGURATIONS, namespace: ns(), name: 'shared' })) as { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };
      // The ApiServerSource's update event: dispatch fans out one reconcile per Gateway.
      await f.post(apiServerEvent('update', edited, `https://kube-apiserver/${ns()}`));
      await waitFor('frozen: Applied=False/ApplyFailed', async () => (condition(await readGateway(ns(), 'frozen'), APPLIED)?.reason === 'ApplyFailed' ? true : undefined), { timeoutMs: 30000 });
      await waitFor('healthy re-applied', programmedAndApplied(ns(), 'healthy', '2'), { timeoutMs: 30000 });

      const firing = await waitFor(`${NOT_APPLIED} firing`, async () => {
        const a = (await p.alerts()).filter((x) => x.labels.alertname === NOT_APPLIED && x.state === 'firing' && x.labels.namespace === ns());
        return a.length > 0 ? a : undefined;
      }, { timeoutMs: 60000, intervalMs: 500 });
      // One alert per Gateway, not per reason; the reason kube-state-metrics
      // exposes now is in the summary.
      expect(firing.map((a) => a.labels)).toEqual([{ alertname: NOT_APPLIED, severity: 'critical', namespace: ns(), name: 'frozen', gatewayclass: cls }]);
      const reason = condition(await readGateway(ns(), 'frozen'), APPLIED)?.reason;
      expect(firing[0]?.annotations.summary).toBe(`Gateway ${ns()}/frozen: the latest configuration is not applied (${reason})`);
      expect(firing[0]?.annotations.runbook).toBe('docs/operations.md#meridiogatewayconfigurationnotapplied');

      // Several evaluations later, still frozen only: the foreign Gateway,
      // whose ApplyFailed Prometheus holds, is not this controller's.
      // Three more evaluations of the Gateway rules, as Prometheus reports them.
      const evaluatedAt = Date.now();
      await waitFor('three more evaluations of the Gateway rules', async () => {
        const last = (await p.lastEvaluations()).get('meridio-2-gateway-controller.gateways') ?? 0;
        return last > evaluatedAt + 2000 ? true : undefined;
      }, { timeoutMs: 15000, intervalMs: 250 });
      expect((await p.query(appliedFalse)).map((r) => r.metric.name).sort()).toEqual(['foreign', 'frozen']);
      const mine = (await p.alerts()).filter((x) => x.labels.namespace === ns());
      expect(mine.filter((a) => a.labels.alertname === NOT_APPLIED).map((a) => `${a.state} ${a.labels.name}`)).toEqual(['firing frozen']);
      expect(mine.filter((a) => a.labels.name === 'foreign')).toEqual([]);
    } finally {
      await freeze.lift();
    }

    // --- Recovery: the next resync applies the edit, and the alert resolves.
    await waitFor('frozen re-applied after the policy is removed', async () => {
      expect((await f.post(pingEvent())).status).toBeLessThan(300);
      return (await programmedAndApplied(ns(), 'frozen', '2')()) ?? undefined;
    }, { timeoutMs: 60000, intervalMs: 1000 });
    await waitFor(`${NOT_APPLIED} resolved`, async () => ((await p.alerts()).some((x) => x.labels.alertname === NOT_APPLIED && x.labels.namespace === ns()) ? undefined : true), { timeoutMs: 60000, intervalMs: 500 });
    expect((await p.alerts()).filter((x) => x.labels.name === 'foreign' && x.labels.namespace === ns())).toEqual([]);

    // --- The dashboard: each panel's queries, as Grafana asks them (a range
    // query over the time shown), return data for the scenario's window.
    await fn.stop();
    fn = undefined;
    const end = Math.ceil(Date.now() / 1000);
    const empty: string[] = [];
    for (const q of dashboardQueries(dashboard())) {
      const expr = q.expr.replaceAll('$__rate_interval', RATE_INTERVAL);
      const series = await p.queryRange(expr, started, end, 1);
      if (series.length === 0) empty.push(`${q.panel} ${q.refId}: ${expr}`);
    }
    expect(empty).toEqual([]);

    // --- kube-state-metrics' least privilege, from the audit log: nothing
    // it asked for was forbidden, and every rule of its ClusterRole was used.
    // Its watches are logged when they end: stop it first. The test's own
    // probe for the binding (a list with limit=1) is not kube-state-metrics'.
    await k.stop();
    const granted = grantedKeys(shippedClusterRole(KSM_RBAC_FILE));
    const audited = (): { events: AuditEvent[]; used: Set<string> } => {
      const events = readEvents(clusterInfo().auditLog, auditFrom).events.filter((e) => e.user.username === identity.username && !/[?&]limit=1(&|$)/.test(e.requestURI));
      return { events, used: usedKeys(events) };
    };
    const { events, used } = await waitFor('kube-state-metrics\' requests in the audit log', () => {
      const a = audited();
      return [...granted].every((g) => a.used.has(g)) ? a : undefined;
    }, { timeoutMs: 15000, intervalMs: 500 }).catch(() => audited());
    expect(events.filter(deniedByAuthorizer).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect({ unused: [...granted].filter((g) => !used.has(g)).sort(), ungranted: [...used].filter((u) => !granted.has(u)).sort() }).toEqual({ unused: [], ungranted: [] });
  });
});
