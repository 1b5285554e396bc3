// Taking over from Meridio-2's controller without restarting an LB Pod, on the
// real API server with kube-controller-manager. For every recorded case that
// has a Deployment: the case's objects, the Gateway status and the Deployment
// exactly as Meridio-2 wrote them (test/oracle/meridio2/), then the function
// with the shipped template (the case's own for template variants) and
// LB_SERVICE_ACCOUNT set to Meridio-2's. It must adopt the Deployment with one
// write that changes no spec (same pod template), leave the
// ReplicaSet alone (revision 1, same pod-template-hash) and keep the
// lastTransitionTime of Accepted and Programmed.
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { loadTemplate, parseTemplate } from '../../functions/reconcile/template.js';
import { oracleCases, type OracleCase } from '../oracle/oracle-cases.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { APPLIED, condition, readGateway } from '../support/fixtures.js';
import { applyOperation, deleteNamespaceAndWait, freshNamespace, replicaSetsOf, settled, type ReplicaSetSummary } from '../support/oracle-world.js';
import { TEMPLATE_FILE, controllerIdentity } from '../support/reconciler.js';

type Json = Record<string, unknown>;

const MERIDIO2_TRANSITION = '2026-01-01T00:00:00Z';
const cases = oracleCases().filter((c) => c.output.steps[0]?.deployment != null);

interface Takeover {
  before: { metadata: { generation: number }; spec: unknown };
  after: { metadata: { generation: number; annotations: Record<string, string> }; spec: unknown };
  rsBefore: ReplicaSetSummary[];
  rsAfter: ReplicaSetSummary[];
  deploymentWrites: Record<string, number>;
  username: string;
}

/**
 * Leaves the case's objects, Gateway status and Deployment as Meridio-2 left
 * them, then lets the function reconcile twice (the second time as the
 * Deployment's own events would), and reads back what changed.
 */
async function takeOver(c: OracleCase, lbServiceAccount: string, check: (t: Takeover) => Promise<void>): Promise<void> {
  const { namespace, gateway } = c.inputs;
  const deploymentName = `sllbr-${gateway}`;
  const recorded = c.output.steps[0]!;
  const custom = adminConfig().makeApiClient(CustomObjectsApi);
  const apps = adminConfig().makeApiClient(AppsV1Api);
  const gatewayRef = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace, name: gateway };
  const readDeploymentRaw = async () => (await custom.getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace, name: deploymentName })) as Takeover['after'];
  await freshNamespace(namespace);
  try {
    const r = await controllerIdentity(namespace);
    for (const op of c.inputs.steps[0]!.operations) await applyOperation(op, namespace);
    const gw = (await custom.getNamespacedCustomObject(gatewayRef)) as Json & { metadata: { uid: string } };

    // What Meridio-2 left: its Accepted and Programmed, and its Deployment as stored.
    const conditions = recorded.gateway.status.conditions.map((x) => ({ ...x, lastTransitionTime: MERIDIO2_TRANSITION }));
    const addresses = recorded.gateway.status.addresses;
    await custom.replaceNamespacedCustomObjectStatus({ ...gatewayRef, body: { ...gw, status: addresses ? { conditions, addresses } : { conditions } } });
    const meta = recorded.deployment!.metadata as unknown as Json & { annotations?: Record<string, string>; ownerReferences: Json[] };
    const { 'deployment.kubernetes.io/revision': _revision, ...annotations } = meta.annotations ?? {};
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: deploymentName, namespace, labels: meta.labels as Record<string, string>, annotations, ownerReferences: meta.ownerReferences.map((o) => ({ ...o, uid: gw.metadata.uid })) as never },
        spec: recorded.deployment!.spec as never,
      },
    });
    await settled(namespace, deploymentName);
    const rsBefore = await replicaSetsOf(namespace, deploymentName);
    // kube-controller-manager made of it what it made of Meridio-2's write.
    expect(rsBefore).toHaveLength(1);
    expect(rsBefore[0]?.revision).toBe('1');
    if (!c.output.nondeterministic.some((n) => n.path === '/replicaSets')) expect(rsBefore[0]?.podTemplateHash).toBe(recorded.replicaSets[0]?.podTemplateHash);
    const before = await readDeploymentRaw();

    const template = c.inputs.templateVariant === 'project' ? loadTemplate(TEMPLATE_FILE) : parseTemplate(c.templateText, `${c.name}/template.yaml`);
    const deps = { ...r.deps, template, settings: { controllerName: c.inputs.controller.controllerName, lbServiceAccount } };
    const window = await auditLog().begin();
    await reconcile({ namespace, name: gateway }, deps);
    await settled(namespace, deploymentName);
    await reconcile({ namespace, name: gateway }, deps);
    const events = await window.end();
    await settled(namespace, deploymentName);
    const ok = events.filter((e) => (e.responseStatus?.code ?? 0) < 400);
    await check({
      before,
      after: await readDeploymentRaw(),
      rsBefore,
      rsAfter: await replicaSetsOf(namespace, deploymentName),
      deploymentWrites: countBy(ok, { user: r.username, verb: WRITE_VERBS, resource: 'deployments' }),
      username: r.username,
    });
  } finally {
    await deleteNamespaceAndWait(namespace);
  }
}

describe('migration from Meridio-2 (real API server)', () => {
  it('has cases to migrate', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s: adopted with one metadata-only write, no new ReplicaSet', async (_name, c) => {
    const { namespace, gateway } = c.inputs;
    await takeOver(c, c.inputs.controller.lbServiceAccount, async (t) => {
      expect(t.deploymentWrites).toEqual({ [`${t.username} update deployments`]: 1 });
      // Metadata only: the spec (pod template included) is exactly what
      // Meridio-2 left. The generation still moves by one, because the API
      // server counts a change of a Deployment's annotations as a new
      // generation (they are copied to its ReplicaSet); no new ReplicaSet.
      expect(t.after.spec).toEqual(t.before.spec);
      expect(t.after.metadata.generation).toBe(t.before.metadata.generation + 1);
      expect(t.after.metadata.annotations['meridio-2.nordix.org/applied-gatewayconfiguration-generation']).toBe('1');
      expect(t.rsAfter).toEqual(t.rsBefore);

      const recorded = c.output.steps[0]!;
      const g = await readGateway(namespace, gateway);
      for (const type of ['Accepted', 'Programmed']) {
        expect({ type, status: condition(g, type)?.status, lastTransitionTime: condition(g, type)?.lastTransitionTime }).toEqual({ type, status: 'True', lastTransitionTime: MERIDIO2_TRANSITION });
      }
      // The Accepted text Meridio-2's DistributionGroup and EndpointNetworkConfiguration controllers match on.
      expect(condition(g, 'Accepted')?.message).toBe(recorded.gateway.status.conditions.find((x) => x.type === 'Accepted')?.message);
      expect(condition(g, APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    });
  });

  it('without LB_SERVICE_ACCOUNT set to Meridio-2\'s, the takeover would roll every LB Pod (why the setting matters)', async () => {
    const c = cases.find((x) => x.name === 'basic');
    if (!c) throw new Error('the recorded case "basic" is missing');
    await takeOver(c, 'stateless-load-balancer', async (t) => {
      expect(t.after.spec).not.toEqual(t.before.spec);
      expect(t.rsAfter.map((rs) => rs.revision)).toEqual(['1', '2']);
      expect(t.rsAfter[1]?.podTemplateHash).not.toBe(t.rsBefore[0]?.podTemplateHash);
    });
  });
});
