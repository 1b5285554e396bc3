import type { CloudEvent } from 'cloudevents';
import { dump } from 'js-yaml';
import { reconcileEvent } from '../../events/outgoing.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { FUNCTION_JOB } from '../../tools/monitoring/alerts.mjs';
import { ALERTS } from '../../tools/monitoring/shipped-alerts.mjs';
import { ruleFile } from '../../tools/monitoring/rules.mjs';
import { APPLIED, condition, editSpec, readGateway } from '../support/fixtures.js';
import { freezeDeployments } from '../support/policies.js';
import { alertIn, scalarOf } from '../support/prometheus-alerts.js';
import { FUNCTION_AUDIENCE } from '../support/sender-tokens.js';
import { startPrometheus, type PrometheusProcess } from '../support/telemetry-backends.js';
import { useWorld } from '../support/world.js';

// The function's counter alerts page on what one short-lived Pod pushed once.
// A function Pod scaled up for one event handles it, is scaled to zero and
// exports its OTLP metrics once, in the flush on SIGTERM: its counter's only
// sample already holds the failure, and increase() (which needs two samples)
// never sees it. Here, with real parts: a FRESH function process (the shipped
// startup snapshot) with the SHIPPED metric export interval (none set: the
// SDK's 60 s, and the process lives seconds) handles exactly one event and
// is stopped; its one export reaches a real Prometheus over its OTLP
// receiver; that Prometheus evaluates the SHIPPED rule file exactly as
// generated (ruleFile(ALERTS): shipped expressions, shipped `for:`, which is
// 0m for both alerts here), every second. Each test checks that Prometheus
// holds exactly one sample of the series, and that the increase() branch of
// the rule alone finds nothing: the alert fires from the first-sample branch.

const DEAD_LETTERS = 'MeridioDeadLetters';
const EVENTS_REFUSED = 'MeridioEventsRefused';
/** The SDK's default, which the shipped Service leaves alone (no OTEL_METRIC_EXPORT_INTERVAL in infra/knative/service.yaml). */
const SHIPPED_EXPORT_INTERVAL_MS = 60000;

/** A reconcile request whose deliveries all failed, as Knative's dead-letter sink delivers it (test/e2e/dead-letter.test.ts). */
function deadLettered(ns: string, name: string): CloudEvent<unknown> {
  return reconcileEvent({ namespace: ns, name }).cloneWith({
    knativeerrorcode: '503',
    knativeerrordest: 'http://meridio-2-gateway-controller.meridio-2-system.svc.cluster.local/',
    knativeerrordata: Buffer.from('{"error":"denied"}').toString('base64'),
  }, false);
}

function shippedAlert(name: string): (typeof ALERTS)[number] {
  const a = ALERTS.find((x) => x.name === name);
  if (!a) throw new Error(`no shipped alert ${name}`);
  return a;
}

/** Runs a fresh function process for one event and stops it; how long it lived (spawn to exit), in ms. */
async function oneEventLife(start: () => Promise<FunctionProcess>, handle: (f: FunctionProcess) => Promise<void>): Promise<number> {
  const f = await start();
  try {
    await handle(f);
  } finally {
    await f.stop();
  }
  return performance.now() - f.spawnedAt;
}

describe('the function\'s counter alerts fire on a counter pushed once, by a fresh process that handled one event: real Prometheus, shipped rules', () => {
  const w = useWorld('fal');
  let prometheus: PrometheusProcess | undefined;

  beforeAll(async () => {
    prometheus = await startPrometheus({ rules: dump(ruleFile(ALERTS)), intervalSeconds: 1 });
  }, 45 * 60 * 1000);

  afterAll(async () => {
    await prometheus?.stop();
  }, 60000);

  it(`one dead-lettered event, one export on SIGTERM: ${DEAD_LETTERS} fires from that single sample (increase() alone would not)`, async () => {
    const p = prometheus!;
    const ns = w.ns();
    const pod = `fn-dl-${ns}`;
    // A Gateway whose Deployment is frozen behind a newer configuration: the
    // dead-lettered request's reconcile still cannot write it.
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    const freeze = await freezeDeployments(ns, 'sllbr-gw', 'frozen');
    let outcome = '';
    let lifeMs: number;
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      lifeMs = await oneEventLife(
        () => startFunctionProcess({ kubeconfig: w.r().kubeconfig, namespaces: [ns], env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: p.otlpMetricsUrl, POD_NAME: pod } }),
        async (f) => {
          expect((await f.listening()).telemetry).toBe(true);
          const event = deadLettered(ns, 'gw');
          expect((await f.post(event, '/dead-letter')).status).toBe(204);
          outcome = String((await f.handled(event.id)).outcome).replace(/^dead-letter:/, '');
          expect(condition(await readGateway(ns, 'gw'), APPLIED)).toMatchObject({ status: 'False', reason: 'RetriesExhausted' });
        },
      );
    } finally {
      await freeze.lift();
    }
    // Shorter than one export interval: the periodic export never ran, the
    // only export was the flush on exit.
    expect(lifeMs).toBeLessThan(SHIPPED_EXPORT_INTERVAL_MS);

    const x = `controller_dead_letters_total{job="${FUNCTION_JOB}", instance="${pod}"}`;
    await waitFor('the flushed counter in Prometheus', async () => ((await scalarOf(p, `last_over_time(${x}[1h])`)) !== undefined ? true : undefined), { timeoutMs: 30000, intervalMs: 250 });
    expect(await p.query(`last_over_time(${x}[1h])`)).toEqual([expect.objectContaining({ metric: expect.objectContaining({ __name__: 'controller_dead_letters_total', job: FUNCTION_JOB, instance: pod, controller_outcome: outcome }), value: [expect.any(Number), '1'] })]);
    // Exactly one sample: no earlier one existed, so increase() has nothing
    // to subtract from (empty), and the rule's increase() branch alone is empty.
    expect(await scalarOf(p, `count_over_time(${x}[1h])`)).toBe(1);
    expect(await p.query(`increase(${x}[1h])`)).toEqual([]);
    expect(await p.query(`sum by (job, controller_outcome) (increase(controller_dead_letters_total{job="${FUNCTION_JOB}"}[1h])) > 0`)).toEqual([]);

    // The shipped rule, as Prometheus evaluates it.
    const firing = await alertIn(p, DEAD_LETTERS, 'firing', 30000);
    expect(firing.map((a) => a.labels)).toEqual([{ alertname: DEAD_LETTERS, severity: 'warning', job: FUNCTION_JOB, controller_outcome: outcome }]);
    expect(firing[0]?.annotations.summary).toBe(`Events were dead-lettered (${outcome})`);
    // The rule's expression returns the one event.
    expect(await p.query(shippedAlert(DEAD_LETTERS).expr)).toEqual([{ metric: { job: FUNCTION_JOB, controller_outcome: outcome }, value: [expect.any(Number), '1'] }]);
  });

  it(`one unauthenticated event refused with 401, one export on SIGTERM: ${EVENTS_REFUSED} fires with http_response_status_code="401"`, async () => {
    const p = prometheus!;
    const ns = w.ns();
    const pod = `fn-401-${ns}`;
    const lifeMs = await oneEventLife(
      () => startFunctionProcess({
        kubeconfig: w.r().kubeconfig,
        namespaces: [ns],
        env: {
          OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: p.otlpMetricsUrl,
          POD_NAME: pod,
          SENDER_AUTH: 'required',
          SENDER_AUTH_AUDIENCE: FUNCTION_AUDIENCE,
          SENDER_AUTH_ALLOWED: `${ns}/trigger-oidc`,
        },
      }),
      async (f) => {
        // No bearer token: refused before the body is read.
        expect((await f.post(reconcileEvent({ namespace: ns, name: 'gw-absent' }))).status).toBe(401);
        await waitFor('the sender refused log line', () => f.logs.find((l) => l.msg === 'sender refused'), { timeoutMs: 10000, intervalMs: 20 });
      },
    );
    expect(lifeMs).toBeLessThan(SHIPPED_EXPORT_INTERVAL_MS);

    const x = `controller_events_total{job="${FUNCTION_JOB}", instance="${pod}"}`;
    await waitFor('the flushed counter in Prometheus', async () => ((await p.query(`last_over_time(${x}[1h])`)).length > 0 ? true : undefined), { timeoutMs: 30000, intervalMs: 250 });
    // The process counted one event, the refused one, and nothing else.
    const counted = await p.query(`last_over_time(${x}[1h])`);
    expect(counted.map((r) => [r.metric.http_response_status_code, r.metric.cloudevents_event_type, r.value[1]])).toEqual([['401', 'unknown', '1']]);
    expect(await scalarOf(p, `count_over_time(${x}[1h])`)).toBe(1);
    expect(await p.query(`increase(${x}[1h])`)).toEqual([]);

    const firing = await alertIn(p, EVENTS_REFUSED, 'firing', 30000);
    expect(firing.map((a) => a.labels)).toEqual([{ alertname: EVENTS_REFUSED, severity: 'warning', job: FUNCTION_JOB, cloudevents_event_type: 'unknown', http_response_status_code: '401' }]);
    expect(firing[0]?.annotations.summary).toBe('Events refused with HTTP 401');
    expect(await p.query(shippedAlert(EVENTS_REFUSED).expr)).toEqual([{ metric: { job: FUNCTION_JOB, cloudevents_event_type: 'unknown', http_response_status_code: '401' }, value: [expect.any(Number), '1'] }]);
  });
});
