import { CustomObjectsApi } from '@kubernetes/client-node';
import { HTTP } from 'cloudevents';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { RECONCILE_TYPE } from '../../events/types.js';
import { pingEvent } from '../../events/outgoing.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import type { LogLine } from '../../tools/harness/function-process.js';
import { BROKER } from '../support/broker-install.js';
import { adminConfig, useNamespace } from '../support/cluster.js';
import { fanOutThroughBroker, useEventPaths, type EventPath } from '../support/event-path.js';
import { createConfiguration, createGateway, editSpec, programmedAndApplied } from '../support/fixtures.js';
import { guessKindToResource } from '../support/install.js';
import { mintToken } from '../support/sender-tokens.js';
import { freezeDeployments } from '../support/policies.js';

// The event path with Knative Eventing's OIDC on (config-features
// authentication-oidc: enabled) and the function refusing every sender but
// the Triggers' identities (SENDER_AUTH=required): the ApiServerSource
// adapter and the PingSource present tokens for the Broker, the broker
// ingress and the channel verify them, the broker filter mints each Trigger's
// token for the function, and the function's own fan-out presents the token
// the SinkBinding would mount. The Broker applies the shipped EventPolicy
// (only the two sources and the SinkBinding may post). Which of these is a stand-in is said in
// test/support/event-path.ts and test/support/eventing.ts.

const SHIPPED = 'infra';
const OVERLAYS = 'test/e2e/overlays';
const ADD = 'dev.knative.apiserver.resource.add';
const PING = 'dev.knative.sources.ping';
const gatewaySubject = (ns: string, name: string): string => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/${guessKindToResource('Gateway')}/${name}`;
const handled = (l: LogLine): boolean => l.msg === 'event handled';
const refused = (l: LogLine): boolean => l.msg === 'sender refused';

describe('the Broker with Knative Eventing OIDC on, the function with SENDER_AUTH=required', () => {
  const ns = useNamespace('oidc');
  const paths = useEventPaths({ oidc: true });
  const eventing = paths.eventing;
  /** The user name of a Trigger's OIDC identity, as the function logs its sender. */
  const triggerSender = (p: EventPath, trigger: string): string => `system:serviceaccount:${p.ns}:${p.triggerIdentities.get(trigger) ?? '?'}`;
  const ingressRequests = () => eventing().proxy.requests.filter((r) => r.host.startsWith('broker-ingress.') && r.path === `/${ns()}/${BROKER}`);

  it('an ApiServerSource event reaches the function through the Broker, from the Trigger\'s identity; the fan-out is accepted by the ingress', async () => {
    const path = await paths.start(ns(), SHIPPED);
    const { fn } = path;
    // Eventing made the Triggers' identities the shipped SENDER_AUTH_ALLOWED names.
    expect([...path.triggerIdentities.entries()].filter(([t, sa]) => sa !== `${t}-oidc-eventing.knative.dev-trigger`)).toEqual([]);
    // The verifiers read the API server's discovery at kubernetes.default.svc.
    expect(eventing().proxy.requests.some((r) => r.path === 'CONNECT' && r.host === 'kubernetes.default.svc:443' && r.status === 200)).toBe(true);
    // OIDC is really on: the ingress refuses an event without a token...
    const ingress = await eventing().proxy.localAddress(path.wiring.brokerUrl);
    const m = HTTP.binary(pingEvent());
    const anonymous = await fetch(ingress, { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string });
    expect(anonymous.status).toBe(401);
    // ...and the shipped EventPolicy is enforced: a valid token of another
    // ServiceAccount of the namespace, which Eventing's default mode
    // (allow-same-namespace) would admit, gets 403.
    const stranger = await mintToken(ns(), 'stranger', [path.wiring.brokerAudience ?? '']);
    const byStranger = await fetch(ingress, { method: 'POST', headers: { ...(m.headers as Record<string, string>), authorization: `Bearer ${stranger}` }, body: m.body as string });
    expect(byStranger.status).toBe(403);

    const mark = fn.logs.length;
    await createConfiguration(ns(), 'cfg');
    await createGateway(ns(), 'gw', path.cls, 'cfg');
    await waitFor('gw Programmed and Applied', programmedAndApplied(ns(), 'gw'), { timeoutMs: 60000 });
    const atIngress = await waitFor('the Gateway add event answered 202 by the Broker ingress', () => ingressRequests().find((r) => r.ceType === ADD && r.ceSubject === gatewaySubject(ns(), 'gw') && r.status === 202), { timeoutMs: 30000 });
    const delivered = await waitFor('the add event handled by the function', () => fn.logs.find((l) => handled(l) && l.eventId === atIngress.ceId), { timeoutMs: 10000 });
    expect(delivered.sender).toBe(triggerSender(path, 'meridio-2-apiserver-add'));
    expect(delivered.status).toBeLessThan(300);

    // The fan-out posts with the SinkBinding's token (202 at the ingress);
    // the reconcile Trigger's identity delivers each event.
    const fanned = await fanOutThroughBroker(eventing(), path, 60000);
    const reconciles = fn.logs.slice(fanned.mark).filter((l) => handled(l) && l.type === RECONCILE_TYPE && fanned.ids.has(l.eventId ?? ''));
    expect(new Set(reconciles.map((l) => l.sender))).toEqual(new Set([triggerSender(path, 'meridio-2-reconcile')]));
    // Every sender since the path was warm was an allowed one.
    expect(fn.logs.slice(mark).filter(refused)).toEqual([]);
  }, 240000);

  it('the PingSource\'s ping reaches the function through the Broker, from the resync Trigger\'s identity', async () => {
    const path = await paths.start(ns(), `${OVERLAYS}/every-minute`, { adapter: false });
    const { fn } = path;
    await createConfiguration(ns(), 'cfg');
    await createGateway(ns(), 'gw', path.cls, 'cfg');
    const ping = await eventing().startPing();
    try {
      await waitFor('the PingSource Ready with an OIDC identity', async () => {
        const ps = await adminConfig().makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'sources.knative.dev', version: 'v1', namespace: ns(), plural: 'pingsources', name: 'meridio-2-resync' }) as { status?: { auth?: { serviceAccountName?: string }; conditions?: Array<{ type: string; status: string }> } };
        return ps.status?.auth?.serviceAccountName && ps.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
      }, { timeoutMs: 60000, intervalMs: 500 });
      await waitFor('gw Programmed and Applied after a ping', programmedAndApplied(ns(), 'gw'), { timeoutMs: 150000, intervalMs: 500 });
      const pinged = await waitFor('the ping handled by the function', () => fn.logs.find((l) => handled(l) && l.type === PING && (l.status ?? 500) < 300), { timeoutMs: 30000 });
      expect(pinged.sender).toBe(triggerSender(path, 'meridio-2-resync'));
      // The PingSource's own token was accepted by the ingress.
      await waitFor('the ping answered 202 by the Broker ingress', () => (ingressRequests().some((r) => r.ceType === PING && r.ceId === pinged.eventId && r.status === 202) ? true : undefined), { timeoutMs: 30000 });
      expect(fn.logs.filter(refused)).toEqual([]);
    } finally {
      await ping.stop();
    }
  }, 240000);

  it('dead letters come through the broker filter from the Trigger\'s identity, which SENDER_AUTH_ALLOWED admits', async () => {
    const path = await paths.start(ns(), `${OVERLAYS}/short-delivery`);
    const { fn } = path;
    await createConfiguration(ns(), 'cfg');
    // Two Gateways, so that the edit is fanned out as reconcile events.
    for (const g of ['gw', 'gw2']) await createGateway(ns(), g, path.cls, 'cfg');
    for (const g of ['gw', 'gw2']) await waitFor(`${g} applied`, programmedAndApplied(ns(), g, '1'), { timeoutMs: 60000 });
    const freeze = await freezeDeployments(ns(), 'sllbr-gw', 'frozen for maintenance');
    try {
      const mark = fn.logs.length;
      const proxyMark = eventing().proxy.requests.length;
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      const dead = await waitFor('the dead-letter log line', () => fn.logs.slice(mark).find((l) => handled(l) && l.type === RECONCILE_TYPE && l.gateway === `${ns()}/gw` && String(l.outcome).startsWith('dead-letter:')), { timeoutMs: 60000 });
      // With OIDC on, the channel sends the dead letter to the broker
      // filter's dls path (as the Trigger's Subscription), and the filter
      // sends it on to the function as the Trigger.
      expect(dead.sender).toBe(triggerSender(path, 'meridio-2-reconcile'));
      expect(eventing().proxy.requests.slice(proxyMark).some((r) => r.host.startsWith('broker-filter.') && r.path.startsWith(`/triggers/${ns()}/meridio-2-reconcile/`) && r.path.endsWith('/dls') && r.ceId === dead.eventId)).toBe(true);
      expect(fn.logs.slice(mark).filter(refused)).toEqual([]);
    } finally {
      await freeze.lift();
    }
  }, 240000);
});
