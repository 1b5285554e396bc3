import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { RECONCILE_TYPE } from '../../events/types.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import type { LogLine } from '../../tools/harness/function-process.js';
import { BROKER } from '../support/broker-install.js';
import { startIssuer } from '../support/cert-issuer.js';
import { useNamespace } from '../support/cluster.js';
import { useEventPaths } from '../support/event-path.js';
import { LB_AVAILABLE, condition, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from '../support/fixtures.js';

// Fan-out to the real Broker ingress over TLS: Eventing's transport
// encryption on (permissive), the data plane's serving certificates issued
// by a stand-in for cert-manager (test/support/cert-issuer.ts) into the
// Secrets Eventing reads, and the function given what a SinkBinding injects
// for an https Broker: K_SINK = its https address, K_CA_CERTS = its CA
// (status.addresses). The rest of the path is the shipped wiring, as in
// broker.test.ts; the channel delivers to the filter over https as well.

const issuer = startIssuer('cert-manager-stand-in');
/** Another CA, as a SinkBinding pointed at a stale or foreign bundle would give. */
const stranger = startIssuer('some-other-ca');
afterAll(() => {
  issuer.close();
  stranger.close();
});

const handled = (l: LogLine): boolean => l.msg === 'event handled';

describe('fan-out to the Broker over TLS (transport encryption, K_CA_CERTS)', () => {
  const ns = useNamespace('tls');
  const paths = useEventPaths({ tls: issuer });
  const eventing = paths.eventing;

  /** A GatewayConfiguration shared by `gateways`, each applied and its Deployment's status reported, and the function quiet. */
  const sharedBy = async (gateways: string[]): Promise<void> => {
    const p = paths.current();
    await createConfiguration(ns(), 'shared');
    for (const g of gateways) await createGateway(ns(), g, p.cls, 'shared');
    for (const g of gateways) await waitFor(`${g} applied`, programmedAndApplied(ns(), g, '1'), { timeoutMs: 60000 });
    for (const g of gateways) {
      await waitFor(`${g}'s Deployment status reported`, async () => (condition(await readGateway(ns(), g), LB_AVAILABLE)?.status === 'False' ? true : undefined), { timeoutMs: 60000 });
    }
    await p.fn.quiet(2000);
  };

  const plainIngressReconciles = (from: number) => eventing().proxy.requests.slice(from).filter((r) => r.host.startsWith('broker-ingress.') && r.ceType === RECONCILE_TYPE);

  it("with the Broker's CA: 3 reconcile requests delivered over https through the Broker, and all 3 Gateways converge", async () => {
    const { fn, fnOptions } = await paths.start(ns(), 'infra');
    // What the SinkBinding would inject: the https address, the CA the issuer signed the ingress with.
    expect(fnOptions.sink).toBe(`https://127.0.0.1:${eventing().ingressHttps?.port}/${ns()}/${BROKER}`);
    expect(fnOptions.env?.K_CA_CERTS?.trim()).toBe(issuer.caPem.trim());
    expect(await fn.listening()).toMatchObject({ sinkCaCerts: true });
    await sharedBy(['a', 'b', 'c']);
    const mark = fn.logs.length;
    const proxyMark = eventing().proxy.requests.length;
    await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'shared', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    const fanned = await waitFor('the dispatch fanned out', () => fn.logs.slice(mark).find((l) => handled(l) && typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/shared') && l.outcome !== undefined), { timeoutMs: 60000 });
    expect(fanned).toMatchObject({ outcome: 'fanned-out', gateways: 3, status: 204 });
    // Each reconcile request came back through the reconcile Trigger, once per Gateway.
    const reconciles = await waitFor('3 reconcile events handled', () => {
      const r = fn.logs.slice(mark).filter((l) => handled(l) && l.type === RECONCILE_TYPE);
      return new Set(r.map((l) => l.gateway)).size === 3 ? r : undefined;
    }, { timeoutMs: 60000 });
    expect(new Set(reconciles.map((l) => l.gateway))).toEqual(new Set(['a', 'b', 'c'].map((g) => `${ns()}/${g}`)));
    for (const g of ['a', 'b', 'c']) await waitFor(`${g} re-applied`, programmedAndApplied(ns(), g, '2'), { timeoutMs: 60000 });
    // None of them went to the ingress's plain-http port (the proxy sees
    // every request there); the channel reached the filter through a TLS
    // tunnel.
    expect(plainIngressReconciles(proxyMark)).toHaveLength(0);
    expect(eventing().proxy.requests.some((r) => r.path === 'CONNECT' && r.host.startsWith('broker-filter.') && r.host.endsWith(':443') && r.status === 200)).toBe(true);
  });

  it('with a wrong CA: a clear error, 503, the event delivered again, and nothing accepted by the Broker', async () => {
    const { fn } = await paths.start(ns(), 'infra', { caCerts: stranger.caPem });
    await sharedBy(['a', 'b']);
    const mark = fn.logs.length;
    const proxyMark = eventing().proxy.requests.length;
    await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'shared', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    const failures = await waitFor('the configuration event answered 503 twice (delivered again)', () => {
      const f = fn.logs.slice(mark).filter((l) => handled(l) && l.outcome === 'fan-out-failed');
      return f.length >= 2 ? f : undefined;
    }, { timeoutMs: 60000 });
    const [first, again] = failures as [LogLine, LogLine];
    expect(again.eventId).toBe(first.eventId);
    for (const f of failures) {
      expect(f.status).toBe(503);
      expect(f.detail).toMatch(/^2 of 2 not delivered: TLS: the certificate of 127\.0\.0\.1:\d+ is not trusted \(\w+: .*\); K_CA_CERTS \(from the SinkBinding\) or a trust bundle must hold the CA that issued it$/);
    }
    // Nothing reached the function as a reconcile request, and the Gateways
    // are still behind the edit.
    expect(fn.logs.slice(mark).filter((l) => handled(l) && l.type === RECONCILE_TYPE)).toHaveLength(0);
    expect(plainIngressReconciles(proxyMark)).toHaveLength(0);
    for (const g of ['a', 'b']) expect(await programmedAndApplied(ns(), g, '2')()).toBeUndefined();
  });
});
