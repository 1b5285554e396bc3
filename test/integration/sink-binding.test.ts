import { pingEvent } from '../../events/outgoing.js';
import { RECONCILE_TYPE } from '../../events/types.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { sendEvent } from '../../tools/dev/post-event.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { startIssuer, startTlsSink, type TlsSink } from '../support/cert-issuer.js';
import { useNamespace } from '../support/cluster.js';
import { createClass, createConfiguration, createGateway } from '../support/fixtures.js';
import { controllerIdentity } from '../support/reconciler.js';

// The SinkBinding contract in the shipped startup snapshot, against a real
// API server: a resync's fan-out goes to an https sink whose certificate a
// CA of its own issued (the cert-manager stand-in), trusted through
// K_CA_CERTS only, with K_CE_OVERRIDES' extensions on every event. With
// another CA, nothing reaches the sink and the resync is answered 503.
// test/e2e/broker-tls.test.ts does the same with the real Broker ingress.

const issuer = startIssuer('sink-binding-ca');
const stranger = startIssuer('another-ca');
let sink: TlsSink;
const fns: FunctionProcess[] = [];

beforeAll(async () => {
  sink = await startTlsSink(issuer, ['broker-ingress.knative-eventing.svc.cluster.local']);
});

afterEach(async () => {
  for (const fn of fns.splice(0)) await fn.stop();
});

afterAll(async () => {
  await sink.close();
  issuer.close();
  stranger.close();
});

describe('the SinkBinding contract, from the shipped snapshot', () => {
  const ns = useNamespace('sinkb');

  const world = async (caCerts: string): Promise<FunctionProcess> => {
    const controller = await controllerIdentity(ns());
    const cls = `meridio-${ns()}`;
    await createClass(cls);
    await createConfiguration(ns(), 'shared');
    for (const g of ['a', 'b']) await createGateway(ns(), g, cls, 'shared');
    const fn = await startFunctionProcess({ kubeconfig: controller.kubeconfig, namespaces: [ns()], sink: sink.url, env: { K_CA_CERTS: caCerts, K_CE_OVERRIDES: '{"extensions":{"cluster":"east"}}' } });
    fns.push(fn);
    return fn;
  };

  it("fans a resync out over https, trusting K_CA_CERTS, with K_CE_OVERRIDES' extension on every event", async () => {
    const fn = await world(issuer.caPem);
    expect(await fn.listening()).toMatchObject({ sink: sink.url, sinkCaCerts: true, ceOverrides: ['cluster'] });
    const before = sink.received.length;
    const res = await sendEvent(`${fn.url}/`, pingEvent());
    expect(res.status).toBe(204);
    const events = await waitFor('2 reconcile requests at the https sink', () => {
      const mine = sink.received.slice(before).filter((e) => e.type === RECONCILE_TYPE && String(e.subject).startsWith(`namespaces/${ns()}/`));
      return mine.length >= 2 ? mine : undefined;
    }, { timeoutMs: 20000 });
    expect(events.map((e) => e.subject).sort()).toEqual([`namespaces/${ns()}/gateways/a`, `namespaces/${ns()}/gateways/b`]);
    expect(events.map((e) => e.cluster)).toEqual(['east', 'east']);
  });

  it('with another CA: nothing reaches the sink, the resync is answered 503, and the log says why', async () => {
    const fn = await world(stranger.caPem);
    const before = sink.received.length;
    const res = await sendEvent(`${fn.url}/`, pingEvent());
    expect(res.status).toBe(503);
    const line = await waitFor('the fan-out-failed log line', () => fn.logs.find((l) => l.msg === 'event handled' && l.outcome === 'fan-out-failed'), { timeoutMs: 10000 });
    expect(line.detail).toMatch(/^2 of 2 not delivered: TLS: the certificate of 127\.0\.0\.1:\d+ is not trusted \(\w+: .*\); K_CA_CERTS/);
    expect(sink.received.slice(before).filter((e) => String(e.subject).startsWith(`namespaces/${ns()}/`))).toHaveLength(0);
  });
});
