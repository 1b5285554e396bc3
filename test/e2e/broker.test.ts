import { setTimeout as delay } from 'node:timers/promises';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { RECONCILE_TYPE } from '../../events/types.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { BROKER } from '../support/broker-install.js';
import { fanOutThroughBroker as fanOut, useEventPaths, type EventPath as Path, type FanOut } from '../support/event-path.js';
import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { adminConfig, useNamespace } from '../support/cluster.js';
import { APPLIED, condition, createConfiguration, createGateway, editSpec, readGateway } from '../support/fixtures.js';
import { programmedAndApplied as programmedAndAppliedIn } from '../support/fixtures.js';
import { guessKindToResource } from '../support/install.js';
import { freezeDeployments } from '../support/policies.js';
import { startFunctionProcess, type LogLine } from '../../tools/harness/function-process.js';

// The whole event path with the real Knative Eventing data plane, every part
// a real process: kube-apiserver → the ApiServerSource receive adapter →
// Broker ingress → in-memory channel dispatcher → Broker filter → the shipped
// function's startup snapshot (dist/function.blob) → the API server, and the function's
// fan-out back through the Broker. The Broker, Triggers, ApiServerSource and
// PingSource are the shipped ones from infra/ (or an overlay of it under
// test/e2e/overlays/), with the Eventing webhook's defaults written by
// applyWebhookDefaults (test/support/broker-install.ts) since the webhook is
// not run. Knative Serving is not run either: the Knative Service's status
// address points at the function process.

const SHIPPED = 'infra';
const OVERLAYS = 'test/e2e/overlays';
const ADD = 'dev.knative.apiserver.resource.add';
/** The adapter names the resource in `subject` by Knative's plural guess ("gatewaies"). */
const gatewaySubject = (ns: string, name: string): string => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/${guessKindToResource('Gateway')}/${name}`;

interface SeenCondition { type: string; status: string; reason?: string; message?: string }

/**
 * Every Applied condition a Gateway passes through, from a watch: a state
 * that lasts only until the next event's reconcile (RetriesExhausted is
 * replaced by ApplyFailed when the following event fails again) is still
 * seen, which polling could miss.
 */
async function watchApplied(ns: string, name: string): Promise<{ seen: SeenCondition[]; stop(): void }> {
  const seen: SeenCondition[] = [];
  const controller = await new Watch(adminConfig()).watch(`/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways`, { fieldSelector: `metadata.name=${name}` }, (_phase, obj: { status?: { conditions?: SeenCondition[] } }) => {
    const c = obj.status?.conditions?.find((x) => x.type === APPLIED);
    if (c) seen.push(c);
  }, () => undefined);
  return { seen, stop: () => controller.abort() };
}

describe('the real Knative Eventing Broker in the event path', () => {
  const ns = useNamespace('brk');
  const paths = useEventPaths();
  const p = paths.current;
  const eventing = paths.eventing;

  /** The function (K_SINK = the Broker) and the shipped wiring from `dir`; the source adapter unless `adapter: false`. */
  const startPath = (dir: string, opts: { adapter?: boolean } = {}): Promise<Path> => paths.start(ns(), dir, opts);

  const programmedAndApplied = (gw: string, generation?: string): (() => Promise<true | undefined>) => programmedAndAppliedIn(ns(), gw, generation);

  const handled = (l: LogLine): boolean => l.msg === 'event handled';
  const ingressRequests = () => eventing().proxy.requests.filter((r) => r.host.startsWith('broker-ingress.') && r.path === `/${ns()}/${BROKER}`);
  const filterRequests = (trigger: string) => eventing().proxy.requests.filter((r) => r.host.startsWith('broker-filter.') && r.path.startsWith(`/triggers/${ns()}/${trigger}/`));

  const fanOutThroughBroker = (timeoutMs: number): Promise<FanOut> => fanOut(eventing(), p(), timeoutMs);

  it('create a Gateway: adapter → Broker ingress → channel → filter → Trigger → function; Programmed and Applied', async () => {
    const { fn } = await startPath(SHIPPED);
    await createConfiguration(ns(), 'cfg');
    await createGateway(ns(), 'gw', p().cls, 'cfg');
    await waitFor('gw Programmed and Applied', programmedAndApplied('gw'), { timeoutMs: 60000 });
    const subject = gatewaySubject(ns(), 'gw');
    // The Gateway's add event, as each hop saw it. The ingress answers once
    // every Trigger's delivery is done (the in-memory channel is synchronous),
    // which may be after the Gateway is already Programmed.
    const atIngress = await waitFor('the Gateway add event answered 202 by the Broker ingress', () => ingressRequests().find((r) => r.ceType === ADD && r.ceSubject === subject && r.status === 202), { timeoutMs: 30000 });
    const id = atIngress.ceId ?? '';
    expect(eventing().proxy.requests.some((r) => r.host.includes('-kn-channel.') && r.ceId === id && r.status === 202)).toBe(true);
    expect(filterRequests('meridio-2-apiserver-add').some((r) => r.ceId === id && r.status >= 200 && r.status < 300)).toBe(true);
    // The filter's own log (debug level, set in config-logging) names it.
    await waitFor('the filter log line for the event', () => (eventing().filter.output().split('\n').some((l) => l.includes('Received message') && l.includes(id)) ? true : undefined), { timeoutMs: 10000 });
    expect(fn.logs.some((l) => handled(l) && l.eventId === id && l.type === ADD && (l.status ?? 500) < 300)).toBe(true);
  });

  it('one GatewayConfiguration shared by 3 Gateways, edited once: 3 reconcile events through the Broker, all applied', async () => {
    await startPath(SHIPPED);
    await fanOutThroughBroker(60000);
  });

  it('a reconcile Trigger that never matches makes that check fail (the check can fail)', async () => {
    await startPath(`${OVERLAYS}/never-matching-filter`);
    await expect(fanOutThroughBroker(20000)).rejects.toThrow(/each reconcile event handled by the function/);
  });

  it('the seed scenario through the Broker: 503s retried with the backoff, the real dead-letter event, RetriesExhausted', async () => {
    // Shorter delivery, the same policy: test/e2e/overlays/short-delivery.
    const { fn } = await startPath(`${OVERLAYS}/short-delivery`);
    const delivery = { retry: 3, delayMs: 500 };
    await createConfiguration(ns(), 'cfg');
    // Two Gateways, so that the edit is fanned out as reconcile events (one
    // Gateway is reconciled inside the dispatch invocation).
    for (const g of ['gw', 'gw2']) await createGateway(ns(), g, p().cls, 'cfg');
    for (const g of ['gw', 'gw2']) await waitFor(`${g} applied`, programmedAndApplied(g, '1'), { timeoutMs: 60000 });
    const freeze = await freezeDeployments(ns(), 'sllbr-gw', 'frozen for maintenance');
    const applied = await watchApplied(ns(), 'gw');
    try {
      const mark = fn.logs.length;
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      const exhausted = await waitFor('gw Applied=False/RetriesExhausted', () => applied.seen.find((c) => c.reason === 'RetriesExhausted'), { timeoutMs: 60000 });
      expect(exhausted.status).toBe('False');
      // The dead-letter event the dispatcher really sent: its knativeerrorcode.
      expect(exhausted.message).toContain('answered 503');
      expect(exhausted.message).toContain('frozen for maintenance');
      // The function logs an event once it has answered it.
      const dead = await waitFor('the dead-letter log line', () => fn.logs.slice(mark).find((l) => handled(l) && l.type === RECONCILE_TYPE && l.gateway === `${ns()}/gw` && String(l.outcome).startsWith('dead-letter:')), { timeoutMs: 10000 });
      const after = fn.logs.slice(mark).filter(handled);
      // Every delivery of that reconcile event, from the function's log: the
      // first try and `retry` retries, each answered 503, spaced by the
      // exponential backoff (delay × 2^n), then nothing more.
      const attempts = after.filter((l) => l.eventId === dead.eventId && !String(l.outcome).startsWith('dead-letter:'));
      expect(attempts.map((l) => l.status)).toEqual(Array(delivery.retry + 1).fill(503));
      const times = attempts.map((l) => Number(l.time));
      const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
      gaps.forEach((gap, n) => {
        const expected = delivery.delayMs * 2 ** n;
        // Never early; late by at most a loaded machine's scheduling delay.
        expect(gap).toBeGreaterThanOrEqual(expected * 0.9);
        expect(gap).toBeLessThan(expected + 3000);
      });
    } finally {
      applied.stop();
      await freeze.lift();
    }
  });

  it('the PingSource (every minute) converges a Gateway created while the source adapter was down', async () => {
    const { fn } = await startPath(`${OVERLAYS}/every-minute`, { adapter: false });
    await createConfiguration(ns(), 'cfg');
    await createGateway(ns(), 'gw', p().cls, 'cfg');
    // No source runs: nothing tells the function (the API server's default
    // condition says Pending).
    expect(condition(await readGateway(ns(), 'gw'), 'Programmed')?.status).not.toBe('True');
    expect(fn.logs.some((l) => handled(l) && l.subject === gatewaySubject(ns(), 'gw'))).toBe(false);
    const ping = await eventing().startPing();
    try {
      await waitFor('the PingSource Ready, with the Broker as its sink', async () => {
        const ps = await adminConfig().makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'sources.knative.dev', version: 'v1', namespace: ns(), plural: 'pingsources', name: 'meridio-2-resync' }) as { status?: { sinkUri?: string; conditions?: Array<{ type: string; status: string }> } };
        return ps.status?.sinkUri === p().wiring.brokerUrl && ps.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
      }, { timeoutMs: 60000, intervalMs: 500 });
      await waitFor('gw Programmed and Applied after a ping', programmedAndApplied('gw'), { timeoutMs: 150000, intervalMs: 500 });
      // The ping, handled by the function (logged once answered) and
      // answered 202 by the ingress (once every Trigger's delivery is done).
      await waitFor('the ping handled by the function', () => (fn.logs.some((l) => handled(l) && l.type === 'dev.knative.sources.ping' && (l.status ?? 500) < 300) ? true : undefined), { timeoutMs: 30000 });
      await waitFor('the ping answered 202 by the Broker ingress', () => (ingressRequests().some((r) => r.ceType === 'dev.knative.sources.ping' && r.status === 202) ? true : undefined), { timeoutMs: 30000 });
    } finally {
      await ping.stop();
    }
  }, 240000);

  it('the function is down for 5 s while an event is sent: the Broker delivers it once the function is back', async () => {
    const { fn, fnOptions, front } = await startPath(SHIPPED);
    await createConfiguration(ns(), 'cfg');
    await fn.stop();
    const down = Date.now();
    await createGateway(ns(), 'gw', p().cls, 'cfg');
    const subject = gatewaySubject(ns(), 'gw');
    // With the in-memory channel, the ingress answers once every Trigger's
    // delivery is done, retries included: wait for the request, not for 202.
    const sent = await waitFor('the Gateway add event at the Broker ingress', () => ingressRequests().find((r) => r.ceType === ADD && r.ceSubject === subject), { timeoutMs: 30000 });
    // At least one delivery failed while the function was down.
    await waitFor('a failed delivery to the function', () => (filterRequests('meridio-2-apiserver-add').some((r) => r.ceId === sent.ceId && r.status >= 500) ? true : undefined), { timeoutMs: 30000 });
    // The scenario's outage length, not a synchronisation.
    await delay(Math.max(0, 5000 - (Date.now() - down)));
    const back = await startFunctionProcess(fnOptions);
    expect(back.port).not.toBe(fn.port);
    front.retarget(back.port);
    p().fn = back;
    await waitFor('gw Programmed and Applied', programmedAndApplied('gw'), { timeoutMs: 90000, intervalMs: 250 });
    // The very event sent while it was down, within the shipped retry budget.
    // The ingress answers once that delivery succeeded (the function logs an
    // event before answering it).
    await waitFor('the ingress to answer 202', () => (sent.status === 202 ? true : undefined), { timeoutMs: 30000 });
    expect(back.logs.some((l) => handled(l) && l.eventId === sent.ceId && (l.status ?? 500) < 300)).toBe(true);
  }, 180000);
});
