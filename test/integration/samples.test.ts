import { CustomObjectsApi, CoreV1Api } from '@kubernetes/client-node';
import { applySamples } from '../../tools/dev/embedded-cluster.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { parseNetworksAnnotation } from '../../functions/reconcile/plan/nad-networks.js';
import { NETWORKS_ANNOTATION } from '../../api/names.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, statusOf } from '../support/cluster.js';
import { condition, readDeployment, readGateway } from '../support/fixtures.js';
import { controllerIdentity } from '../support/reconciler.js';

// A fresh install plus infra/samples, as a new user applies them: the LB Pods
// the controller renders reference only NetworkAttachmentDefinitions that the
// samples create (the shipped template names none of its own).

const NAMESPACE = 'meridio-demo';
const NADS = { group: 'k8s.cni.cncf.io', version: 'v1', plural: 'network-attachment-definitions' };

describe('infra/samples', () => {
  afterAll(async () => {
    const core = adminConfig().makeApiClient(CoreV1Api);
    await statusOf(core.deleteNamespace({ name: NAMESPACE }));
    await statusOf(adminConfig().makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', name: 'meridio-2' }));
  });

  it('render LB Pods that reference only the NADs the samples create', async () => {
    const applied = await applySamples(adminConfig(), process.cwd());
    expect(applied.some((a) => a.includes('NetworkAttachmentDefinition'))).toBe(true);
    const r = await controllerIdentity(NAMESPACE);
    const key = { namespace: NAMESPACE, name: 'sllb-a' };
    expect(await reconcile(key, r.deps)).toMatchObject({ outcome: 'applied', next: 'settle' });

    const d = await readDeployment(NAMESPACE, 'sllbr-sllb-a');
    const value = d.spec?.template.metadata?.annotations?.[NETWORKS_ANNOTATION];
    const parsed = parseNetworksAnnotation(value ?? '');
    if (!parsed.ok) throw new Error(parsed.error);
    const referenced = parsed.networks.map((n) => `${n.namespace ?? NAMESPACE}/${n.name}`);
    expect(referenced.length).toBeGreaterThan(0);
    expect(parsed.networks.map((n) => `${n.name}@${n.interface}`)).toEqual(['sysctl-tuning@dummy', 'app-net@net1']);

    const list = (await adminConfig().makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...NADS, namespace: NAMESPACE })) as { items: Array<{ metadata: { name: string; namespace: string } }> };
    const created = new Set(list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`));
    for (const nad of referenced) expect(created).toContain(nad);

    await waitFor('the sample Gateway to be Programmed', async () => (condition(await readGateway(NAMESPACE, 'sllb-a'), 'Programmed')?.status === 'True' ? true : undefined));
  });
});
