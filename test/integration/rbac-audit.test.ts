import { deniedByAuthorizer, readEvents, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { grantedKeys, usedKeys } from '../support/rbac-usage.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { PODDISRUPTIONBUDGETS } from '../../api/watched-resources.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { clusterInfo } from '../support/cluster.js';
import { freezeDeployments } from '../support/policies.js';
import { editSpec, readGateway, APPLIED, condition } from '../support/fixtures.js';
import { shippedClusterRole } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

// Least privilege, proven from the audit log: every request the controller's
// ServiceAccount made (in this file and in every test before it) was granted
// by the shipped ClusterRole, and every rule the ClusterRole grants was used.
// Runs last (test/sequencer.mjs). It first drives one pass that touches every
// verb, so it also holds when run on its own.

const CONTROLLER_USER = /^system:serviceaccount:[^:]+:meridio-2-gateway-controller$/;

describe('the controller ClusterRole against the audit log', () => {
  const w = useWorld('rbac');

  it('grants exactly what the controller uses', async () => {
    const ns = w.ns();
    // With the opt-in LB PodDisruptionBudgets on (LB_PDB_MAX_UNAVAILABLE),
    // which the ClusterRole grants for.
    const r = { ...w.r(), deps: { ...w.r().deps, settings: { ...w.r().deps.settings, lbPodDisruptionBudget: { maxUnavailable: 1 } } } };
    // Create (the Deployment and its PDB), status, Normal Event; then an
    // update of each (the PDB edited by hand).
    await w.setup();
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ pdbWritten: true });
    await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    await editSpec(PODDISRUPTIONBUDGETS, ns, 'sllbr-gw', (s) => ({ ...s, maxUnavailable: 2 }));
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ deploymentWritten: true, pdbWritten: true });
    // The lists of dispatch and resync.
    const handled = await invoke({ kind: 'ping' }, handlerDeps(r.deps, { namespaces: [ns] }), { type: 'ping', id: 'rbac' });
    expect(handled.next).toBe('settle');
    // A failure repeated: the second one bumps the existing Event (get + update).
    const freeze = await freezeDeployments(ns, 'sllbr-gw', 'frozen');
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 4, enforceReplicas: true } }));
      expect((await reconcile(w.key(), r.deps)).outcome).toBe('write-failed');
      expect((await reconcile(w.key(), r.deps)).outcome).toBe('write-failed');
      expect(condition(await readGateway(ns, 'gw'), APPLIED)?.reason).toBe('ApplyFailed');
    } finally {
      await freeze.lift();
    }

    const all: AuditEvent[] = readEvents(clusterInfo().auditLog).events;
    const mine = all.filter((e) => CONTROLLER_USER.test(e.user.username));
    expect(mine.length).toBeGreaterThan(0);
    // The tests' own probe (test/support/reconciler.ts) may be refused until a new binding takes effect.
    const forbidden = mine.filter(deniedByAuthorizer).map((e) => `${e.verb} ${e.requestURI}`).filter((r) => !r.endsWith('/gatewayclasses/rbac-probe'));
    expect(forbidden).toEqual([]);

    // The probe that waits for a new binding to take effect (a GET of the
    // GatewayClass "rbac-probe") is part of the tests, not the controller.
    const used = usedKeys(mine.filter((e) => e.objectRef?.name !== 'rbac-probe'));
    const granted = grantedKeys(shippedClusterRole());
    expect([...used].filter((u) => !granted.has(u)).sort()).toEqual([]);
    expect([...granted].filter((g) => !used.has(g)).sort()).toEqual([]);
  });
});
