// The opt-in PodDisruptionBudget of an LB Deployment (render-pdb.ts): what is
// rendered, when a write is due, and that a PDB this Gateway does not control
// is never taken over. The API server's side (create, GC) is in
// test/integration/pdb.test.ts.
import { pdbAction, pdbEvent, renderPdb } from '../../functions/reconcile/plan/render-pdb.js';
import { pdbDrifts } from '../../functions/dispatch/resync-plan.js';
import type { Deployment, PodDisruptionBudget } from '../../api/schemas.js';
import { CONTROLLER, GW, GW_UID, LB_SERVICE_ACCOUNT, NS, TEMPLATE_HASH, gateway, gatewayClass, observed, plan, templateDeployment } from './reconcile-fixtures.js';

const SETTING = { maxUnavailable: 1 };

/** The LB Deployment the planner creates for the fixture Gateway. */
function lbDeployment(): Deployment {
  const p = plan(observed());
  if (p.outcome !== 'needs-write' || p.deployment.action !== 'create') throw new Error('expected a create');
  return p.deployment.object;
}

/** As the API server returns it: the render plus server fields. */
function stored(pdb: PodDisruptionBudget): PodDisruptionBudget {
  return { ...structuredClone(pdb), metadata: { ...structuredClone(pdb.metadata), uid: 'uid-pdb', resourceVersion: '7', generation: 1 }, status: { currentHealthy: 1 } };
}

describe('renderPdb', () => {
  it('is named and labelled like the LB Deployment, selects its Pods, and is controlled by the Gateway', () => {
    const d = lbDeployment();
    const pdb = renderPdb(gateway(), d, SETTING);
    expect(pdb).toEqual({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: {
        name: `sllbr-${GW}`,
        namespace: NS,
        labels: { app: `sllbr-${GW}`, 'gateway.networking.k8s.io/gateway-name': GW, 'app.kubernetes.io/managed-by': 'gateway-controller.meridio-2.nordix.org' },
        ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: GW, uid: GW_UID, controller: true, blockOwnerDeletion: true }],
      },
      spec: { selector: d.spec.selector, maxUnavailable: 1 },
    });
    // The same owner reference as the Deployment's.
    expect(pdb.metadata.ownerReferences).toEqual(d.metadata.ownerReferences);
  });

  it('takes the live Deployment\'s selector (kept from a Meridio-2 Deployment), not a guess', () => {
    const d = lbDeployment();
    d.spec.selector = { matchLabels: { app: `sllbr-${GW}`, extra: 'x' } };
    expect(renderPdb(gateway(), d, { maxUnavailable: '25%' }).spec).toEqual({ selector: { matchLabels: { app: `sllbr-${GW}`, extra: 'x' } }, maxUnavailable: '25%' });
  });
});

describe('pdbAction', () => {
  const gw = gateway();

  it('creates when absent, then nothing once stored as rendered (no write on a no-op)', () => {
    const d = lbDeployment();
    const first = pdbAction(gw, d, null, SETTING);
    expect(first.action).toBe('create');
    if (first.action !== 'create') return;
    expect(pdbAction(gw, d, stored(first.object), SETTING)).toEqual({ action: 'none' });
  });

  it('reverts a hand edit of a field it owns, and keeps what it does not own', () => {
    const d = lbDeployment();
    const live = stored(renderPdb(gw, d, SETTING));
    live.spec = { ...live.spec, maxUnavailable: undefined, minAvailable: 2, unhealthyPodEvictionPolicy: 'AlwaysAllow' };
    delete live.spec.maxUnavailable;
    live.metadata.labels = { team: 'a' };
    live.metadata.annotations = { note: 'kept' };
    const a = pdbAction(gw, d, live, SETTING);
    expect(a.action).toBe('update');
    if (a.action !== 'update') return;
    expect(a.object.spec).toEqual({ selector: d.spec.selector, maxUnavailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow' });
    expect(a.object.metadata.labels).toMatchObject({ team: 'a', 'app.kubernetes.io/managed-by': 'gateway-controller.meridio-2.nordix.org' });
    expect(a.object.metadata.annotations).toEqual({ note: 'kept' });
    // Optimistic concurrency: the live resourceVersion goes with the update.
    expect(a.object.metadata.resourceVersion).toBe('7');
  });

  it('follows a change of the setting', () => {
    const d = lbDeployment();
    const live = stored(renderPdb(gw, d, SETTING));
    const a = pdbAction(gw, d, live, { maxUnavailable: '50%' });
    expect(a.action === 'update' && a.object.spec.maxUnavailable).toBe('50%');
  });

  it('never adopts a PDB of its name that the Gateway does not control (another owner, none, or an earlier Gateway of the same name)', () => {
    const d = lbDeployment();
    for (const ownerReferences of [undefined, [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'x', uid: 'u', controller: true }], [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: GW, uid: 'uid-of-an-earlier-gw1', controller: true }]]) {
      const live = stored(renderPdb(gw, d, SETTING));
      if (ownerReferences === undefined) delete live.metadata.ownerReferences;
      else live.metadata.ownerReferences = ownerReferences;
      live.spec.maxUnavailable = 5;
      const a = pdbAction(gw, d, live, SETTING);
      expect(a.action).toBe('collision');
      if (a.action !== 'collision') return;
      const ev = pdbEvent(a, `${NS}/sllbr-${GW}`);
      expect(ev).toMatchObject({ type: 'Warning', reason: 'PodDisruptionBudgetCollision' });
    }
  });

  it('plans nothing without a Deployment the Gateway controls, or for a Gateway being deleted', () => {
    const d = lbDeployment();
    expect(pdbAction(gw, null, null, SETTING)).toEqual({ action: 'none' });
    const foreign = { ...d, metadata: { ...d.metadata, ownerReferences: [] } };
    expect(pdbAction(gw, foreign, null, SETTING)).toEqual({ action: 'none' });
    expect(pdbAction(gateway({ deletionTimestamp: '2025-01-01T00:00:00Z' }), d, null, SETTING)).toEqual({ action: 'none' });
  });

  it('says in a Warning Event what a failed write did', () => {
    const d = lbDeployment();
    const a = pdbAction(gw, d, null, SETTING);
    if (a.action !== 'create') throw new Error('expected a create');
    expect(pdbEvent(a, 'ns/x', { message: 'quota exceeded' })).toEqual({ type: 'Warning', reason: 'PodDisruptionBudgetFailed', action: 'Create', note: 'Create of PodDisruptionBudget ns/x failed: quota exceeded' });
    expect(pdbEvent(a, 'ns/x')).toMatchObject({ type: 'Normal', reason: 'PodDisruptionBudgetApplied' });
  });
});

describe('pdbDrifts (the resync\'s check)', () => {
  const inputs = { classes: new Map([['meridio', gatewayClass()]]), configurations: new Map(), routesByParent: new Map(), namespaces: null };
  const context = (on: boolean) => ({
    input: {
      template: { deployment: templateDeployment(), hash: TEMPLATE_HASH },
      settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, ...(on && { lbPodDisruptionBudget: SETTING }) },
    },
    now: '2025-01-01T00:00:00Z',
  });

  it('is drift only with the setting on, for a Gateway of ours, when a write is due', () => {
    const d = lbDeployment();
    expect(pdbDrifts(gateway(), d, null, inputs, context(false))).toBe(false);
    expect(pdbDrifts(gateway(), d, null, inputs, context(true))).toBe(true);
    expect(pdbDrifts(gateway(), d, stored(renderPdb(gateway(), d, SETTING)), inputs, context(true))).toBe(false);
    expect(pdbDrifts(gateway({ className: 'other' }), d, null, inputs, context(true))).toBe(false);
    // A collision is reported by the reconcile, but is no write: no drift.
    const foreign = stored(renderPdb(gateway({ uid: 'other' }), d, SETTING));
    expect(pdbDrifts(gateway(), d, foreign, inputs, context(true))).toBe(false);
  });
});
