import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { RECONCILE_TYPE } from '../../events/types.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { adapterIdentity } from '../support/adapter-identity.js';
import { startAdapter, type AdapterProcess } from '../support/adapter-process.js';
import { installEventWiring } from '../support/broker-install.js';
import { useNamespace } from '../support/cluster.js';
import { startEventing, type EventingPlane } from '../support/eventing.js';
import { LB_AVAILABLE, condition, configurationSpec, createClass, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from '../support/fixtures.js';
import { adapterResources } from '../support/event-path.js';
import { controllerIdentity } from '../support/reconciler.js';
import { stableAddress, type StableAddress } from '../support/stable-address.js';
import { startJaeger, startPrometheus, type JaegerProcess, type JaegerSpan, type JaegerTrace, type PrometheusProcess } from '../support/telemetry-backends.js';

// The function's OpenTelemetry metrics and traces, read back from the
// receivers an operator would run: a real Prometheus (its OTLP receiver) and
// a real Jaeger (OTLP in, its query API out), both built from their Go
// modules. The event path is the real one: kube-apiserver → ApiServerSource
// adapter → Broker ingress → in-memory channel → Broker filter → the shipped
// function (startup snapshot) → the API server, and the function's fan-out
// back through the Broker. The Eventing data plane exports its own spans to
// the same Jaeger (Knative's config-observability), so one trace shows an
// edit's whole path.
//
// The metric export interval is set far beyond the test's length: metrics
// reach Prometheus only through the flush on SIGTERM, which is what a Pod
// scaled to zero relies on.

const SERVICE = 'meridio-2-gateway-controller';
const UPDATE = 'dev.knative.apiserver.resource.update';

const tag = (s: JaegerSpan, key: string): unknown => s.tags.find((t) => t.key === key)?.value;
const serviceOf = (t: JaegerTrace, s: JaegerSpan): string => t.processes[s.processID]?.serviceName ?? '';
const parentOf = (t: JaegerTrace, s: JaegerSpan): JaegerSpan | undefined => {
  const ref = s.references.find((r) => r.refType === 'CHILD_OF');
  return ref ? t.spans.find((x) => x.spanID === ref.spanID) : undefined;
};
/** The spans from `s` up to the root, through parents present in the trace. */
function ancestors(t: JaegerTrace, s: JaegerSpan): JaegerSpan[] {
  const out: JaegerSpan[] = [];
  for (let p = parentOf(t, s); p && out.length < 100; p = parentOf(t, p)) out.push(p);
  return out;
}

describe('OpenTelemetry metrics in a real Prometheus and traces in a real Jaeger', () => {
  const ns = useNamespace('otel');
  let prometheus: PrometheusProcess | undefined;
  let jaeger: JaegerProcess | undefined;
  let plane: EventingPlane | undefined;
  let fn: FunctionProcess | undefined;
  let adapter: AdapterProcess | undefined;
  let front: StableAddress | undefined;

  beforeAll(async () => {
    prometheus = await startPrometheus();
    jaeger = await startJaeger();
    plane = await startEventing({ observability: { 'tracing-protocol': 'http/protobuf', 'tracing-endpoint': jaeger.otlpTracesUrl, 'tracing-sampling-rate': '1' } });
  }, 45 * 60 * 1000);

  afterAll(async () => {
    await adapter?.stop();
    await fn?.stop();
    await front?.close();
    await plane?.stop();
    await jaeger?.stop();
    await prometheus?.stop();
  }, 120000);

  it('an edit through the adapter and the Broker: the reconcile counter in Prometheus, and one trace from the Broker through the fan-out to each API request', async () => {
    const eventing = plane!;
    const controller = await controllerIdentity(ns());
    const cls = `meridio-${ns()}`;
    await createClass(cls);
    front = await stableAddress(0);
    const wiring = await installEventWiring(ns(), 'infra', front.url);
    fn = await startFunctionProcess({
      kubeconfig: controller.kubeconfig,
      namespaces: [ns()],
      sink: await eventing.proxy.localAddress(wiring.brokerUrl),
      env: {
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prometheus!.otlpMetricsUrl,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: jaeger!.otlpTracesUrl,
        OTEL_METRIC_EXPORT_INTERVAL: '3600000',
        POD_NAME: `fn-${ns()}`,
      },
    });
    front.retarget(fn.port);
    const f = fn;
    expect((await f.listening()).telemetry).toBe(true);

    // The adapter watches what the shipped ApiServerSource names (Gateways by
    // their discovered plural: Knative's guess is wrong, docs/operations.md).
    adapter = await startAdapter({
      kubeconfig: await adapterIdentity(ns()),
      sink: wiring.brokerUrl,
      namespaces: [ns()],
      resources: await adapterResources(wiring),
      env: eventing.proxyEnv,
    });
    // Nothing is sent for what exists when the adapter starts, and its
    // watches open asynchronously: touch a probe object until its event has
    // come through the Broker to the function.
    await createConfiguration(ns(), 'probe', configurationSpec());
    let n = 0;
    await waitFor('the adapter → Broker → function path', async () => {
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'probe', (s) => ({ ...s, horizontalScaling: { replicas: 1 + (++n % 5), enforceReplicas: true } }));
      return f.logs.some((l) => typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/probe')) ? true : undefined;
    }, { timeoutMs: 60000, intervalMs: 1000 });

    // Two Gateways share one GatewayConfiguration: its edit fans out one
    // reconcile request per Gateway through the Broker.
    await createConfiguration(ns(), 'shared', configurationSpec());
    for (const g of ['a', 'b']) await createGateway(ns(), g, cls, 'shared');
    for (const g of ['a', 'b']) await waitFor(`${g} applied`, programmedAndApplied(ns(), g, '1'), { timeoutMs: 90000 });
    // Only the Gateways still behind the configuration are fanned out
    // (docs/design.md §11): let the new Gateways' own events drain first.
    for (const g of ['a', 'b']) {
      await waitFor(`${g}'s Deployment status reported`, async () => (condition(await readGateway(ns(), g), LB_AVAILABLE)?.status === 'False' ? true : undefined), { timeoutMs: 60000 });
    }
    await f.quiet(2000);
    const mark = f.logs.length;
    await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'shared', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    for (const g of ['a', 'b']) await waitFor(`${g} re-applied`, programmedAndApplied(ns(), g, '2'), { timeoutMs: 60000 });
    const dispatch = await waitFor('the edit fanned out', () => f.logs.slice(mark).find((l) => l.msg === 'event handled' && l.type === UPDATE && l.outcome === 'fanned-out' && String(l.subject).endsWith('/gatewayconfigurations/shared')), { timeoutMs: 60000 });
    expect(dispatch.gateways).toBe(2);
    const reconciles = await waitFor('both reconcile requests handled', () => {
      const r = f.logs.slice(mark).filter((l) => l.msg === 'event handled' && l.type === RECONCILE_TYPE && (l.gateway === `${ns()}/a` || l.gateway === `${ns()}/b`));
      return new Set(r.map((l) => l.gateway)).size === 2 ? r : undefined;
    }, { timeoutMs: 60000 });

    // --- Jaeger: one trace holds the Broker's spans, the dispatch
    // invocation, its fan-out requests, the reconcile invocations they
    // caused, and those invocations' API requests.
    // Each process exports its spans in its own batches (the function at
    // once, the Eventing data plane on its own schedule): wait until the
    // trace holds the invocation's parent and, for every reconcile, the
    // chain of spans up to the fan-out request that caused it.
    const trace = await waitFor('the edit\'s trace in Jaeger, with the Broker\'s spans and the reconciles it caused', async () => {
      const [t] = await jaeger!.traces(SERVICE, { 'cloudevents.event_id': String(dispatch.eventId) });
      if (!t) return undefined;
      const inv = t.spans.find((s) => tag(s, 'cloudevents.event_id') === dispatch.eventId && serviceOf(t, s) === SERVICE);
      if (!inv || !parentOf(t, inv)) return undefined;
      const sent = t.spans.filter((s) => s.operationName === 'send reconcile' && parentOf(t, s)?.spanID === inv.spanID);
      const joined = reconciles.every((l) => {
        const span = t.spans.find((s) => tag(s, 'cloudevents.event_id') === l.eventId && s.operationName === `handle ${RECONCILE_TYPE}`);
        return span !== undefined && ancestors(t, span).some((a) => sent.includes(a)) && t.spans.some((s) => tag(s, 'kubernetes.verb') !== undefined && ancestors(t, s).includes(span));
      });
      return joined ? t : undefined;
    }, { timeoutMs: 60000, intervalMs: 1000 });

    const invocation = trace.spans.find((s) => tag(s, 'cloudevents.event_id') === dispatch.eventId && serviceOf(trace, s) === SERVICE);
    expect(invocation?.operationName).toBe(`handle ${UPDATE}`);
    // The invocation's log line joins its trace: its trace_id and span_id
    // are the invocation span's, and its level is a word.
    expect({ level: dispatch.level, trace_id: dispatch.trace_id, span_id: dispatch.span_id }).toEqual({ level: 'info', trace_id: trace.traceID.padStart(32, '0'), span_id: invocation!.spanID.padStart(16, '0') });
    for (const l of reconciles) {
      const span = trace.spans.find((s) => tag(s, 'cloudevents.event_id') === l.eventId && s.operationName === `handle ${RECONCILE_TYPE}`);
      expect({ trace_id: l.trace_id, span_id: l.span_id }).toEqual({ trace_id: trace.traceID.padStart(32, '0'), span_id: span?.spanID.padStart(16, '0') });
    }
    // Continued from the Broker's span context: its parent is a span the
    // Eventing data plane exported (the filter's delivery), in this trace.
    const brokerParent = parentOf(trace, invocation!);
    expect(brokerParent).toBeDefined();
    expect(serviceOf(trace, brokerParent!)).toMatch(/broker|channel|imc|dispatcher/i);
    expect(tag(invocation!, 'http.response.status_code')).toBe(Number(dispatch.status));

    // One fan-out request per Gateway, each a child of the invocation.
    const sends = trace.spans.filter((s) => s.operationName === 'send reconcile' && parentOf(trace, s)?.spanID === invocation!.spanID);
    expect(sends.map((s) => tag(s, 'controller.gateway')).sort()).toEqual([`${ns()}/a`, `${ns()}/b`]);

    // Each reconcile invocation joined this trace (the traceparent the
    // function set on the event it fanned out) and continues the Broker's
    // delivery span of it.
    for (const l of reconciles) {
      const span = trace.spans.find((s) => tag(s, 'cloudevents.event_id') === l.eventId && s.operationName === `handle ${RECONCILE_TYPE}`);
      expect(span).toBeDefined();
      const delivery = parentOf(trace, span!);
      expect(delivery).toBeDefined();
      expect(serviceOf(trace, delivery!)).not.toBe(SERVICE);
      // Through the Broker's ingress, channel and filter spans, up to one of the fan-out requests.
      const up = ancestors(trace, span!);
      expect({ chain: up.map((s) => `${serviceOf(trace, s)}: ${s.operationName}`), reachesSend: up.some((s) => sends.includes(s)) }).toEqual(expect.objectContaining({ reachesSend: true }));
      // And its API requests are its descendants, with verb, resource and code.
      const own = trace.spans.filter((s) => tag(s, 'kubernetes.verb') !== undefined && ancestors(trace, s).includes(span!));
      expect(own.some((s) => s.operationName === 'get gateways' && tag(s, 'http.response.status_code') === 200)).toBe(true);
      if (l.outcome === 'applied') expect(own.some((s) => s.operationName === 'update gateways/status')).toBe(true);
    }

    // --- Prometheus: the metrics arrive with the flush on SIGTERM.
    await fn.stop();
    // It exited by itself (not the harness's SIGKILL after 30 s), its flush
    // finished within the budget, and no export failed along the way.
    const stopped = f.logs.find((l) => l.msg === 'stopped');
    expect({ exit: f.exit, stopped: stopped && { telemetry: stopped.telemetry }, exportFailures: f.logs.filter((l) => String(l.msg).startsWith('telemetry')) })
      .toEqual({ exit: { code: 0, signal: null }, stopped: { telemetry: 'completed' }, exportFailures: [] });
    const job = `{job="${SERVICE}",instance="fn-${ns()}"}`;
    const reconciled = await waitFor('the reconcile counter in Prometheus', async () => {
      const r = await prometheus!.query(`sum by (controller_outcome) (controller_reconciles_total${job.replace('}', ',controller_kind="Gateway"}')})`);
      return r.length > 0 ? r : undefined;
    }, { timeoutMs: 30000, intervalMs: 500 });
    const byOutcome = Object.fromEntries(reconciled.map((r) => [r.metric.controller_outcome, Number(r.value[1])]));
    expect(byOutcome.applied).toBeGreaterThanOrEqual(2);
    const count = async (promql: string): Promise<number> => (await prometheus!.query(`sum(${promql})`)).reduce((n, r) => n + Number(r.value[1]), 0);
    expect(await count(`controller_events_total${job.replace('}', `,cloudevents_event_type="${UPDATE}"}`)}`)).toBeGreaterThanOrEqual(1);
    expect(await count(`controller_fan_out_size_count${job}`)).toBeGreaterThanOrEqual(1);
    expect(await count(`controller_fan_out_requests_total${job.replace('}', ',controller_result="delivered"}')}`)).toBeGreaterThanOrEqual(2);
    expect(await count(`http_client_request_duration_seconds_count${job.replace('}', ',kubernetes_resource="gateways",kubernetes_verb="update",kubernetes_subresource="status"}')}`)).toBeGreaterThanOrEqual(2);
    expect(await count(`controller_reconcile_duration_seconds_count${job}`)).toBeGreaterThanOrEqual(2);
    expect(await count(`controller_cold_start_duration_seconds_count${job}`)).toBe(1);
  });
});
