import { AdmissionregistrationV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { GATEWAYS } from '../../functions/kube/kube-api.js';
import { PODDISRUPTIONBUDGETS } from '../../api/watched-resources.js';
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../api/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import type { ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { adminConfig, auditLog, statusOf } from '../support/cluster.js';
import { deleteObject, editSpec, listEvents, readDeployment, readGateway } from '../support/fixtures.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { useWorld } from '../support/world.js';

// LB_PDB_MAX_UNAVAILABLE (issue 30, part 2): one PodDisruptionBudget per LB
// Deployment, against the real API server and kube-controller-manager (its
// garbage collector), as the controller's ServiceAccount under the shipped
// ClusterRole.

interface Pdb {
  metadata: { name: string; resourceVersion: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[] };
  spec: { selector?: unknown; maxUnavailable?: number | string; minAvailable?: number | string };
}

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);
const readPdb = async (ns: string, name: string): Promise<Pdb> => (await custom().getNamespacedCustomObject({ ...PODDISRUPTIONBUDGETS, namespace: ns, name })) as Pdb;

describe('PodDisruptionBudgets for LB Pods (LB_PDB_MAX_UNAVAILABLE)', () => {
  const w = useWorld('pdb');
  const on = (): ReconcileDeps => ({ ...w.r().deps, settings: { ...w.r().deps.settings, lbPodDisruptionBudget: { maxUnavailable: 1 } } });
  const pass = () => invoke({ kind: 'ping' }, handlerDeps(on(), { namespaces: [w.ns()] }), { type: 'dev.knative.sources.ping', id: `pdb-${Date.now()}` });

  /** Reconciles until one changes nothing (the deployment controller's status taken in). */
  async function settle(deps: ReconcileDeps): Promise<void> {
    await waitFor('the LB Deployment observed by its controller', async () => ((await readDeployment(w.ns(), 'sllbr-gw')).status?.observedGeneration !== undefined ? true : undefined));
    await waitFor('a reconcile that writes nothing', async () => {
      const r = await reconcile(w.key(), deps);
      return r.outcome === 'in-sync' && !r.statusWritten && !r.pdbWritten && r.eventsWritten === 0 ? true : undefined;
    });
  }

  it('is created with the Deployment, kept (a hand edit or a deletion is repaired by the resync), costs no write on a no-op, and is removed with its Gateway by the garbage collector', async () => {
    const ns = w.ns();
    const user = w.r().username;
    await w.setup();
    const first = await reconcile(w.key(), on());
    expect(first).toMatchObject({ outcome: 'applied', deploymentWritten: true, pdbWritten: true, next: 'settle' });

    const gw = await readGateway(ns, 'gw');
    const deployment = await readDeployment(ns, 'sllbr-gw');
    const pdb = await readPdb(ns, 'sllbr-gw');
    expect(pdb.spec).toEqual({ selector: deployment.spec?.selector, maxUnavailable: 1 });
    expect(pdb.metadata.labels?.[LABEL_MANAGED_BY]).toBe(MANAGED_BY_VALUE);
    expect(pdb.metadata.ownerReferences).toEqual([{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw', uid: gw.metadata.uid, controller: true, blockOwnerDeletion: true }]);
    expect((await listEvents(ns)).filter((e) => e.reason === 'PodDisruptionBudgetApplied')).toHaveLength(1);

    // A no-op: the reads gain one GET of the PDB, and nothing is written.
    await settle(on());
    const quiet = await auditLog().begin();
    const noop = await reconcile(w.key(), on());
    const quietEvents = await quiet.end();
    expect(noop).toMatchObject({ outcome: 'in-sync', deploymentWritten: false, pdbWritten: false, statusWritten: false, eventsWritten: 0 });
    expect(countBy(quietEvents, { user, verb: WRITE_VERBS })).toEqual({});
    expect(countBy(quietEvents, { user, verb: 'get', resource: 'poddisruptionbudgets' })).toEqual({ [`${user} get poddisruptionbudgets`]: 1 });
    // And a resync pass in sync reconciles nothing.
    expect(await pass()).toMatchObject({ next: 'settle', outcome: 'no-gateway-affected' });

    // A hand edit of a field we own: the next resync pass finds it by the
    // list and the reconcile it starts writes it back (one update), keeping
    // a label of the editor's.
    await editSpec(PODDISRUPTIONBUDGETS, ns, 'sllbr-gw', (s) => ({ ...s, maxUnavailable: undefined, minAvailable: 0 }));
    const repair = await auditLog().begin();
    expect(await pass()).toMatchObject({ next: 'settle', outcome: 'in-sync', gateway: `${ns}/gw` });
    const repairEvents = await repair.end();
    expect(countBy(repairEvents, { user, verb: WRITE_VERBS, resource: 'poddisruptionbudgets' })).toEqual({ [`${user} update poddisruptionbudgets`]: 1 });
    expect(countBy(repairEvents, { user, verb: WRITE_VERBS, resource: 'deployments' })).toEqual({});
    expect((await readPdb(ns, 'sllbr-gw')).spec).toEqual({ selector: deployment.spec?.selector, maxUnavailable: 1 });

    // Deleted by hand: recreated by the next pass.
    await custom().deleteNamespacedCustomObject({ ...PODDISRUPTIONBUDGETS, namespace: ns, name: 'sllbr-gw' });
    expect(await pass()).toMatchObject({ next: 'settle', outcome: 'in-sync', gateway: `${ns}/gw` });
    expect((await readPdb(ns, 'sllbr-gw')).spec.maxUnavailable).toBe(1);
    expect(await pass()).toMatchObject({ outcome: 'no-gateway-affected' });

    // The Gateway deleted: the garbage collector removes the PDB through its ownerReference.
    await deleteObject(GATEWAYS, ns, 'gw');
    await waitFor('the garbage collector to remove the PDB', async () => ((await statusOf(readPdb(ns, 'sllbr-gw'))) === 404 ? true : undefined), { timeoutMs: 60_000 });
  }, 120_000);

  it('never adopts or changes a PDB of its name that the Gateway does not control: one Warning Event, and nothing written on a no-op', async () => {
    const ns = w.ns();
    const user = w.r().username;
    const foreign = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'sllbr-gw', namespace: ns, labels: { team: 'ops' } }, spec: { selector: { matchLabels: { app: 'sllbr-gw' } }, minAvailable: 2 } };
    await custom().createNamespacedCustomObject({ ...PODDISRUPTIONBUDGETS, namespace: ns, body: foreign });
    const before = await readPdb(ns, 'sllbr-gw');
    await w.setup();
    expect(await reconcile(w.key(), on())).toMatchObject({ outcome: 'applied', deploymentWritten: true, pdbWritten: false, next: 'settle' });
    const after = await readPdb(ns, 'sllbr-gw');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.spec).toEqual(foreign.spec);
    const warnings = (await listEvents(ns)).filter((e) => e.reason === 'PodDisruptionBudgetCollision');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.note).toContain('not controlled by this Gateway');

    await settle(on());
    // The first pass also takes in the (test's own) GatewayClass's status.
    expect(await pass()).toMatchObject({ outcome: 'no-gateway-affected' });
    const quiet = await auditLog().begin();
    expect(await reconcile(w.key(), on())).toMatchObject({ outcome: 'in-sync', pdbWritten: false, eventsWritten: 0 });
    // The resync reads the unlisted PDB by name and finds nothing to write.
    expect(await pass()).toMatchObject({ outcome: 'no-gateway-affected' });
    expect(countBy(await quiet.end(), { user, verb: WRITE_VERBS })).toEqual({});
    expect((await listEvents(ns)).filter((e) => e.reason === 'PodDisruptionBudgetCollision')).toHaveLength(1);
  }, 120_000);

  it('a refused PDB update: a Warning Event with the API server\'s message, the Gateway\'s status untouched, and the event delivered again (503)', async () => {
    const ns = w.ns();
    await w.setup();
    await reconcile(w.key(), on());
    await settle(on());
    // A policy that refuses every change of the PDBs' spec in this namespace.
    const adm = adminConfig().makeApiClient(AdmissionregistrationV1Api);
    const name = `freeze-pdb-${ns}`;
    const message = 'PDBs are frozen for maintenance';
    await adm.createValidatingAdmissionPolicy({
      body: {
        metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ apiGroups: ['policy'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['poddisruptionbudgets'] }] },
          validations: [{ expression: 'object.spec == oldObject.spec', message }],
        },
      },
    });
    await adm.createValidatingAdmissionPolicyBinding({
      body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } } } },
    });
    try {
      // Policies take effect asynchronously: a dry-run update runs admission and persists nothing.
      await waitFor('the policy to refuse a PDB update', async () => {
        const live = await readPdb(ns, 'sllbr-gw');
        const code = await statusOf(custom().replaceNamespacedCustomObject({ ...PODDISRUPTIONBUDGETS, namespace: ns, name: 'sllbr-gw', body: { ...live, spec: { ...live.spec, maxUnavailable: 9 } }, dryRun: 'All' }));
        return code === 422 ? true : undefined;
      });
      // The setting changed (2 where the PDB has 1): an update is due, and refused.
      const two: ReconcileDeps = { ...on(), settings: { ...on().settings, lbPodDisruptionBudget: { maxUnavailable: 2 } } };
      const statusBefore = (await readGateway(ns, 'gw')).metadata.resourceVersion;
      const res = await reconcile(w.key(), two);
      expect(res).toMatchObject({ outcome: 'in-sync', pdbWritten: false, statusWritten: false, next: 'redeliver', error: { class: 'persistent', code: 422 } });
      expect((await readGateway(ns, 'gw')).metadata.resourceVersion).toBe(statusBefore);
      const failed = (await listEvents(ns)).filter((e) => e.reason === 'PodDisruptionBudgetFailed');
      expect(failed).toHaveLength(1);
      expect(failed[0]?.type).toBe('Warning');
      expect(failed[0]?.note).toContain(message);
      expect((await readPdb(ns, 'sllbr-gw')).spec.maxUnavailable).toBe(1);
    } finally {
      await adm.deleteValidatingAdmissionPolicyBinding({ name });
      await adm.deleteValidatingAdmissionPolicy({ name });
    }
  }, 120_000);

  it('is off by default: no PDB is read or written', async () => {
    const ns = w.ns();
    await w.setup();
    const window = await auditLog().begin();
    expect(await reconcile(w.key(), w.r().deps)).toMatchObject({ outcome: 'applied', pdbWritten: false });
    expect(await statusOf(readPdb(ns, 'sllbr-gw'))).toBe(404);
    expect(countBy(await window.end(), { user: w.r().username, resource: 'poddisruptionbudgets' })).toEqual({});
  });
});
