import { countBy, WRITE_VERBS, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, TEMPLATE_HASH } from '../../api/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { auditLog } from '../support/cluster.js';
import { useWorld } from '../support/world.js';
import {
  APPLIED,
  LB_AVAILABLE,
  condition,
  createRoute,
  editSpec,
  rawDeployment,
  rawStatus,
  readDeployment,
  readGateway,
} from '../support/fixtures.js';
import { LB_SERVICE_ACCOUNT, type Reconciler } from '../support/reconciler.js';

// The reconcile of one Gateway on the real API server, run as the controller's
// ServiceAccount under the shipped ClusterRole.

const writesBy = (events: AuditEvent[], user: string): Record<string, number> => countBy(events, { user, verb: WRITE_VERBS });

describe('reconcile', () => {
  const w = useWorld('rc');
  const ns = w.ns;
  let r: Reconciler;
  beforeEach(() => {
    r = w.r();
  });
  const setup = (): Promise<void> => w.setup();

  it('happy path: renders the Deployment, records the applied state and reports every condition', async () => {
    await setup();
    await createRoute(ns(), 'r1', 'gw', ['20.0.0.2/32']);
    await createRoute(ns(), 'r2', 'gw', ['20.0.0.1/32', '20.0.0.2/32']);
    const res = await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    expect(res).toMatchObject({ outcome: 'applied', next: 'settle', deploymentWritten: true, statusWritten: true });

    const gw = await readGateway(ns(), 'gw');
    const d = await readDeployment(ns(), 'sllbr-gw');
    // Rendering rules (docs/design.md §4).
    expect(d.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw', uid: gw.metadata.uid, controller: true }),
    ]);
    expect(d.metadata?.labels).toMatchObject({
      app: 'sllbr-gw',
      'gateway.networking.k8s.io/gateway-name': 'gw',
      'app.kubernetes.io/managed-by': 'gateway-controller.meridio-2.nordix.org',
      team: 'blue',
    });
    expect(d.metadata?.annotations?.['example.com/note']).toBe('hi');
    expect(d.spec?.selector.matchLabels).toEqual({ app: 'sllbr-gw' });
    expect(d.spec?.template.metadata?.labels?.app).toBe('sllbr-gw');
    expect(d.spec?.replicas).toBe(2);
    const pod = d.spec!.template.spec!;
    expect(pod.serviceAccountName).toBe(LB_SERVICE_ACCOUNT);
    const anti = pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.[0]?.labelSelector?.matchExpressions?.[0];
    expect(anti).toMatchObject({ key: 'app', values: ['sllbr-gw'] });
    // Set where the template declares it (both containers of the shipped template).
    for (const c of pod.containers) {
      expect(c.env?.find((e) => e.name === 'MERIDIO_GATEWAY_NAME')?.value).toBe('gw');
    }
    const router = pod.containers.find((c) => c.name === 'router');
    expect(router?.env?.map((e) => e.name)).toEqual(expect.arrayContaining(['POD_NAME', 'POD_NAMESPACE', 'POD_UID']));
    expect(pod.readinessGates).toEqual([{ conditionType: 'meridio-2.nordix.org/ipv4-connectivity' }]);
    const networks = JSON.parse(d.spec!.template.metadata!.annotations!['k8s.v1.cni.cncf.io/networks']!) as { name: string; interface: string }[];
    // The shipped template attaches no network of its own (as Meridio-2's).
    expect(networks.map((n) => `${n.name}@${n.interface}`).sort()).toEqual(['app-net@net1']);

    // The applied state, in the same object.
    const cfg = (await rawDeployment(ns(), 'sllbr-gw')).metadata.annotations!;
    expect(cfg[APPLIED_CONFIGURATION_NAME]).toBe('cfg');
    expect(cfg[APPLIED_CONFIGURATION_GENERATION]).toBe('1');
    expect(cfg[APPLIED_CONFIGURATION_UID]).toMatch(/^[0-9a-f-]{36}$/);
    expect(cfg[APPLIED_GATEWAY_GENERATION]).toBe('1');
    expect(cfg[TEMPLATE_HASH]).toBe(r.deps.template.hash);

    // Status.
    expect(condition(gw, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1 });
    expect(condition(gw, 'Programmed')).toMatchObject({ status: 'True', reason: 'Programmed' });
    expect(condition(gw, 'Programmed')?.message).toContain('sllbr-gw');
    expect(condition(gw, 'Programmed')?.message).toContain('GatewayConfiguration cfg generation 1');
    expect(condition(gw, APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    expect(gw.status?.addresses).toEqual([
      { type: 'IPAddress', value: '20.0.0.1' },
      { type: 'IPAddress', value: '20.0.0.2' },
    ]);

    // LoadBalancerAvailable follows what the deployment controller reports.
    // No kubelet runs here, so no replica ever becomes available.
    await waitFor('the deployment controller to report status', async () => {
      const live = await readDeployment(ns(), 'sllbr-gw');
      return live.status?.observedGeneration !== undefined ? live : undefined;
    });
    await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    const after = await readGateway(ns(), 'gw');
    expect(condition(after, LB_AVAILABLE)).toMatchObject({ status: 'False', reason: 'NoAvailableReplicas', message: '0/2 LB replicas available' });
  });

  it('no-op: a second reconcile of an unchanged Gateway makes zero writes and leaves the status byte-identical', async () => {
    await setup();
    await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    // Let the deployment controller settle first, so its status write does
    // not count as a change of our inputs.
    await waitFor('deployment status', async () => ((await readDeployment(ns(), 'sllbr-gw')).status?.observedGeneration === 1 ? true : undefined));
    await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    const before = await rawStatus(ns(), 'gw');

    const window = await auditLog().begin();
    const res = await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    const events = await window.end();

    expect(res).toMatchObject({ outcome: 'in-sync', deploymentWritten: false, statusWritten: false, eventsWritten: 0 });
    expect(writesBy(events, r.username)).toEqual({});
    // The reads are the floor: two parallel rounds, nothing else.
    expect(countBy(events, { user: r.username })).toEqual({
      [`${r.username} get gateways`]: 1,
      [`${r.username} get deployments`]: 1,
      [`${r.username} list l34routes`]: 1,
      [`${r.username} get gatewayclasses`]: 1,
      [`${r.username} get gatewayconfigurations`]: 1,
    });
    expect(await rawStatus(ns(), 'gw')).toBe(before);
  });

  it('a GatewayConfiguration edit is one Deployment write carrying the new generation and one status write', async () => {
    await setup();
    await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    const programmedBefore = condition(await readGateway(ns(), 'gw'), 'Programmed');
    await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));

    const window = await auditLog().begin();
    const res = await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    const events = await window.end();

    expect(res).toMatchObject({ outcome: 'applied', deploymentWritten: true, statusWritten: true });
    // A write the API server refused with 409 (the deployment controller updated
    // the status in between, and the reconcile re-observed) wrote nothing.
    const accepted = events.filter((e) => (e.responseStatus?.code ?? 0) !== 409);
    expect(countBy(accepted, { user: r.username, verb: ['update', 'create', 'patch'], resource: 'deployments' })).toEqual({ [`${r.username} update deployments`]: 1 });
    expect(countBy(events, { user: r.username, verb: ['update', 'patch'], resource: 'gateways/status' })).toEqual({ [`${r.username} update gateways/status`]: 1 });
    const d = await rawDeployment(ns(), 'sllbr-gw');
    expect(d.metadata.annotations![APPLIED_CONFIGURATION_GENERATION]).toBe('2');
    expect((d as unknown as { spec: { replicas: number } }).spec.replicas).toBe(3);
    const gw = await readGateway(ns(), 'gw');
    expect(condition(gw, 'Programmed')?.message).toContain('generation 2');
    expect(condition(gw, 'Programmed')?.lastTransitionTime).toBe(programmedBefore?.lastTransitionTime);
    expect(condition(gw, APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
  });

});
