import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { READINESS_GATE_IPV4, READINESS_GATE_IPV6 } from '../../api/names.js';
import { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, statusOf } from '../support/cluster.js';

// The fake Nodes that the conformance test's own control plane runs Pods on:
// real kube-scheduler binds the Pod, KWOK (the kubelet simulator) makes it
// Running and Ready with its pinned default Stages, readiness gates included,
// and deleting it completes. The shared control plane has no Node at all, so
// no Pod ever runs there (other tests assert "0/2 LB replicas available").

describe('a control plane with fake Nodes (kube-scheduler + KWOK)', () => {
  let cp: ControlPlane | undefined;

  afterAll(async () => {
    await cp?.stop();
    if (cp) expect(cp.leftovers()).toEqual([]);
  });

  it('schedules a Pod with both LB readiness gates and reports it Ready, gates True; the shared control plane has no Node', async () => {
    expect((await adminConfig().makeApiClient(CoreV1Api).listNode()).items).toEqual([]);

    cp = await ControlPlane.start({ fakeNodes: ['fake-node-1'], log: () => undefined });
    const kc = new KubeConfig();
    kc.loadFromFile(cp.info.adminKubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'gated' },
        spec: {
          containers: [{ name: 'c', image: 'registry.invalid/none:1' }],
          readinessGates: [{ conditionType: READINESS_GATE_IPV4 }, { conditionType: READINESS_GATE_IPV6 }],
        },
      },
    });
    const pod = await waitFor('the gated Pod to be Ready', async () => {
      const p = await core.readNamespacedPod({ namespace: 'default', name: 'gated' });
      return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
    }, { timeoutMs: 60000, intervalMs: 200 });
    expect(pod.spec?.nodeName).toBe('fake-node-1');
    expect(pod.status?.phase).toBe('Running');
    const status = Object.fromEntries((pod.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(status).toMatchObject({ [READINESS_GATE_IPV4]: 'True', [READINESS_GATE_IPV6]: 'True', ContainersReady: 'True' });

    // A Pod bound to a Node is only removed once its kubelet confirms: KWOK does.
    await core.deleteNamespacedPod({ namespace: 'default', name: 'gated' });
    await waitFor('the gated Pod to be gone', async () =>
      (await statusOf(core.readNamespacedPod({ namespace: 'default', name: 'gated' }))) === 404 ? true : undefined, { timeoutMs: 60000, intervalMs: 200 });
  }, 300000);
});
