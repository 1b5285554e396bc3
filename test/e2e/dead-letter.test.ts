import type { CloudEvent } from 'cloudevents';
import { reconcileEvent } from '../../events/outgoing.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { freezeDeployments } from '../support/policies.js';
import { APPLIED, condition, editSpec, listEvents, readGateway } from '../support/fixtures.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { useWorld } from '../support/world.js';

// A reconcile request whose deliveries all failed reaches the dead-letter
// sink. If the Deployment is still stale, the Gateway says so: retries are
// exhausted, and nothing will try again until the next change or resync.

function deadLettered(ns: string, name: string): CloudEvent<unknown> {
  const original = reconcileEvent({ namespace: ns, name });
  return original.cloneWith({
    knativeerrorcode: '503',
    knativeerrordest: 'http://meridio-2-gateway-controller.meridio-2-system.svc.cluster.local/',
    knativeerrordata: Buffer.from('{"error":"denied"}').toString('base64'),
  }, false);
}

describe('the dead-letter path', () => {
  const w = useWorld('dl');
  let fn: FunctionProcess | undefined;
  beforeEach(async () => {
    fn = await startFunctionProcess({ kubeconfig: w.r().kubeconfig, namespaces: [w.ns()] });
  });
  afterEach(async () => {
    await fn?.stop();
  });

  it('records RetriesExhausted and a Warning when the Deployment is still stale', async () => {
    const ns = w.ns();
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    const freeze = await freezeDeployments(ns, 'sllbr-gw', 'frozen');
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      expect((await fn!.post(deadLettered(ns, 'gw'), '/dead-letter')).status).toBe(204);
      const gw = await readGateway(ns, 'gw');
      const applied = condition(gw, APPLIED);
      expect(applied).toMatchObject({ status: 'False', reason: 'RetriesExhausted' });
      expect(applied?.message).toContain('503');
      expect(applied?.message).toContain('frozen');
      expect(condition(gw, 'Programmed')?.status).toBe('True');
      expect((await listEvents(ns)).filter((e) => e.type === 'Warning' && e.reason === 'RetriesExhausted').length).toBe(1);
    } finally {
      await freeze.lift();
    }
  });

  it('leaves a current Gateway alone (dead-lettered on the main path too)', async () => {
    const ns = w.ns();
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    const before = condition(await readGateway(ns, 'gw'), APPLIED);
    // Knative may deliver it to the sink's root path: the extensions say what it is.
    expect((await fn!.post(deadLettered(ns, 'gw'))).status).toBe(204);
    expect(condition(await readGateway(ns, 'gw'), APPLIED)).toEqual(before);
    expect((await listEvents(ns)).filter((e) => e.reason === 'RetriesExhausted')).toEqual([]);
  });
});
