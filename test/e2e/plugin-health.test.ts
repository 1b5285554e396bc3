import { installEventWiring } from '../support/broker-install.js';
import { useNamespace } from '../support/cluster.js';
import { startEventing, type EventingPlane } from '../support/eventing.js';
import { kubectlMeridio, pluginReader } from '../support/kubectl-meridio.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { shippedResyncSeconds } from '../../tools/monitoring/resync-schedule.mjs';

// The controller health line of `kubectl meridio status` (issue 42, item 4)
// against the shipped event wiring (infra/knative: Broker, five Triggers,
// ApiServerSource, PingSource, the Knative Service) as the real Knative
// Eventing reconcilers report it: the schemas of api/knative-schemas.ts
// read what Knative writes, not what a test wrote. Knative Serving is not
// run: the Service's Ready and address are set as Serving would
// (setServiceAddress), and no Pod of it runs, which is idle. The plugin
// runs as an identity bound to the read-only role only.

const TRIGGERS = 5;

describe('kubectl meridio status: the health line over the real Eventing', () => {
  const ns = useNamespace('plh');
  let eventing: EventingPlane | undefined;
  beforeAll(async () => {
    eventing = await startEventing();
  }, 300_000);
  afterAll(async () => {
    await eventing?.stop();
  });

  it('Broker and Triggers Ready as Eventing reports them, the Service Ready and idle, the sources named with their state, the resync\'s schedule', async () => {
    // No function behind the Service: the line is about the wiring.
    await installEventWiring(ns(), 'infra', 'http://127.0.0.1:9');
    const reader = await pluginReader(ns());
    const line = await waitFor('the Broker and every Trigger Ready in the health line', async () => {
      const run = await kubectlMeridio(['status', '-A', '--controller-namespace', ns()], reader.kubeconfig);
      const first = run.stdout.split('\n')[0] ?? '';
      return first.includes('Broker 1/1 Ready') && first.includes(`Triggers ${TRIGGERS}/${TRIGGERS} Ready`) ? first : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1000 });
    const parts = line.replace(`Controller (${ns()}): `, '').split('; ');
    expect(parts[0]).toBe('Service meridio-2-gateway-controller Ready');
    expect(parts[1]).toBe('Pods 0 (idle)');
    expect(parts[2]).toBe('Broker 1/1 Ready');
    expect(parts[3]).toBe(`Triggers ${TRIGGERS}/${TRIGGERS} Ready`);
    // The ApiServerSource's adapter Deployment never gets a Pod here (no Node): not Ready, and named with why.
    expect(parts[4]).toMatch(/^ApiServerSources (1\/1 Ready|0\/1 Ready \(meridio-2-gateway-watch: (False|Unknown)(\/\w+)?\))$/);
    // The shipped schedule (*/N * * * *): the last and next ping one period apart, on a minute it fires at.
    expect(parts[5]).toMatch(/^PingSource (1\/1 Ready|0\/1 Ready \(meridio-2-resync: [^)]*\)), last \d{4}-\d\d-\d\dT\d\d:\d\d:00Z, next \d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/);
    const [last, next] = [...(parts[5] ?? '').matchAll(/\d{4}-\d\d-\d\dT[\d:]+Z/g)].map((m) => Date.parse(m[0]));
    const period = shippedResyncSeconds() * 1000;
    expect({ apart: (next ?? 0) - (last ?? 0), offset: (last ?? 1) % period }).toEqual({ apart: period, offset: 0 });
  }, 300_000);
});
