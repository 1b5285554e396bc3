// Taking over from Meridio-2's controller without restarting an LB Pod, on the
// real API server with kube-controller-manager. For every recorded case that
// has a Deployment: the case's objects, the Gateway status and the Deployment
// exactly as Meridio-2 wrote them (test/oracle/meridio2/), then the function
// with the shipped template (the case's own for template variants) and
// LB_SERVICE_ACCOUNT set to Meridio-2's. It must adopt the Deployment with one
// write that changes no spec (same generation, same pod template), leave the
// ReplicaSet alone (revision 1, same pod-template-hash) and keep the
// lastTransitionTime of Accepted and Programmed.
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { loadTemplate, parseTemplate } from '../../functions/reconcile/template.js';
import { oracleCases } from '../oracle/oracle-cases.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { APPLIED, condition, readGateway } from '../support/fixtures.js';
import { applyOperation, deleteNamespaceAndWait, freshNamespace, replicaSetsOf, settled } from '../support/oracle-world.js';
import { TEMPLATE_FILE, controllerIdentity } from '../support/reconciler.js';

type Json = Record<string, unknown>;

const MERIDIO2_TRANSITION = '2026-01-01T00:00:00Z';
const cases = oracleCases().filter((c) => c.output.steps[0]?.deployment != null);

describe('migration from Meridio-2 (real API server)', () => {
  it('has cases to migrate', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s: adopted with one metadata-only write, no new ReplicaSet', async (_name, c) => {
    const { namespace, gateway } = c.inputs;
    const deploymentName = `sllbr-${gateway}`;
    const recorded = c.output.steps[0]!;
    const custom = adminConfig().makeApiClient(CustomObjectsApi);
    const apps = adminConfig().makeApiClient(AppsV1Api);
    await freshNamespace(namespace);
    try {
      const r = await controllerIdentity(namespace);
      for (const op of c.inputs.steps[0]!.operations) await applyOperation(op, namespace);
      const gw = (await custom.getNamespacedCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace, name: gateway })) as { metadata: { uid: string; resourceVersion: string } };

      // What Meridio-2 left: its Accepted and Programmed, and its Deployment as stored.
      const conditions = recorded.gateway.status.conditions.map((x) => ({ ...x, lastTransitionTime: MERIDIO2_TRANSITION }));
      await custom.replaceNamespacedCustomObjectStatus({
        group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace, name: gateway,
        body: { ...(await custom.getNamespacedCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace, name: gateway }) as Json), status: recorded.gateway.status.addresses ? { conditions, addresses: recorded.gateway.status.addresses } : { conditions } },
      });
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
      expect(rsBefore).toHaveLength(1);
      expect(rsBefore[0]?.revision).toBe('1');
      if (!c.output.nondeterministic.some((n) => n.path === '/replicaSets')) expect(rsBefore[0]?.podTemplateHash).toBe(recorded.replicaSets[0]?.podTemplateHash);
      const before = (await custom.getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace, name: deploymentName })) as { metadata: { generation: number }; spec: unknown };

      const template = c.inputs.templateVariant === 'project' ? loadTemplate(TEMPLATE_FILE) : parseTemplate(c.templateText, `${c.name}/template.yaml`);
      const deps = { ...r.deps, template, settings: { controllerName: c.inputs.controller.controllerName, lbServiceAccount: c.inputs.controller.lbServiceAccount } };
      const window = await auditLog().begin();
      await reconcile({ namespace, name: gateway }, deps);
      await settled(namespace, deploymentName);
      await reconcile({ namespace, name: gateway }, deps);
      const events = await window.end();

      const ok = events.filter((e) => (e.responseStatus?.code ?? 0) < 400);
      expect(countBy(ok, { user: r.username, verb: WRITE_VERBS, resource: 'deployments' })).toEqual({ [`${r.username} update deployments`]: 1 });
      const after = (await custom.getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace, name: deploymentName })) as { metadata: { generation: number; annotations: Record<string, string> }; spec: unknown };
      expect(after.metadata.generation).toBe(before.metadata.generation);
      expect(after.spec).toEqual(before.spec);
      expect(after.metadata.annotations['meridio-2.nordix.org/applied-gatewayconfiguration-generation']).toBe('1');
      await settled(namespace, deploymentName);
      expect(await replicaSetsOf(namespace, deploymentName)).toEqual(rsBefore);

      const g = await readGateway(namespace, gateway);
      for (const type of ['Accepted', 'Programmed']) {
        expect({ type, status: condition(g, type)?.status, lastTransitionTime: condition(g, type)?.lastTransitionTime }).toEqual({ type, status: 'True', lastTransitionTime: MERIDIO2_TRANSITION });
      }
      // The Accepted text Meridio-2's DistributionGroup and EndpointNetworkConfiguration controllers match on.
      expect(condition(g, 'Accepted')?.message).toBe(recorded.gateway.status.conditions.find((x) => x.type === 'Accepted')?.message);
      expect(condition(g, APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    } finally {
      await deleteNamespaceAndWait(namespace);
    }
  });
});
