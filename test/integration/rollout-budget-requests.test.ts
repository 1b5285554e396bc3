import { CONDITION_APPLIED, CONDITION_PROGRAMMED } from '../../api/names.js';
import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { reconcile, type ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import type { Template } from '../../functions/reconcile/template.js';
import { auditLog } from '../support/cluster.js';
import { condition, createGateway, readDeployment, readGateway } from '../support/fixtures.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { useWorld } from '../support/world.js';
import { withLbImage } from '../support/next-template.js';

// What the rollout budget costs in API requests, counted in the audit log, as
// the controller's ServiceAccount under the shipped ClusterRole. The shared
// control plane has no Node, so no LB Pod ever runs and every LB Deployment
// stays "rolling" (0 of its replicas available) and holds a slot for good,
// which is what a stuck rollout is.

const ROLLOUT_QUEUED = 'RolloutQueued';

describe('the rollout budget in API requests (LB_ROLLOUT_BUDGET=1)', () => {
  const w = useWorld('budget');
  const budgeted = (template?: Template): ReconcileDeps => ({
    ...w.r().deps,
    ...(template ? { template } : {}),
    settings: { ...w.r().deps.settings, rolloutBudget: 1 },
    namespaces: [w.ns()],
  });
  /** The shipped template with another LB image: a pod-template change for every Gateway. */
  const newTemplate = (): Template => withLbImage(w.r().deps.template, 'registry.example/lb:next');

  it('a no-op reads nothing more; a pod-template change lists the LB Deployments twice (the rollout index\'s holders, then the head of the line), and a queued Gateway writes its status once, then nothing', async () => {
    const ns = w.ns();
    const user = w.r().username;
    await w.setup({ gw: 'gw-a' });
    await createGateway(ns, 'gw-b', w.cls(), 'cfg');
    // Creates never wait.
    expect(await reconcile({ namespace: ns, name: 'gw-a' }, budgeted())).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    expect(await reconcile({ namespace: ns, name: 'gw-b' }, budgeted())).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    for (const name of ['gw-a', 'gw-b']) await reconcile({ namespace: ns, name }, budgeted());

    // A no-op with the budget on: the five reads of any reconcile, no census.
    const quiet = await auditLog().begin();
    expect(await reconcile({ namespace: ns, name: 'gw-b' }, budgeted())).toMatchObject({ outcome: 'in-sync', statusWritten: false, deploymentWritten: false });
    const quietEvents = await quiet.end();
    expect(countBy(quietEvents, { user })).toEqual({
      [`${user} get deployments`]: 1,
      [`${user} get gatewayclasses`]: 1,
      [`${user} get gatewayconfigurations`]: 1,
      [`${user} get gateways`]: 1,
      [`${user} list l34routes`]: 1,
    });

    // The template changes; gw-a's Deployment is rolling (never available),
    // so gw-b waits: two label-selected lists of Deployments more, and its
    // status, nothing else written.
    const next = newTemplate();
    const before = await readDeployment(ns, 'sllbr-gw-b');
    const queued = await auditLog().begin();
    expect(await reconcile({ namespace: ns, name: 'gw-b' }, budgeted(next))).toMatchObject({ outcome: 'rollout-queued', deploymentWritten: false, statusWritten: true });
    const queuedEvents = await queued.end();
    expect(countBy(queuedEvents, { user })).toEqual({
      [`${user} get deployments`]: 1,
      [`${user} get gatewayclasses`]: 1,
      [`${user} get gatewayconfigurations`]: 1,
      [`${user} get gateways`]: 1,
      [`${user} list l34routes`]: 1,
      [`${user} list deployments`]: 2,
      [`${user} update gateways/status`]: 1,
    });
    expect((await readDeployment(ns, 'sllbr-gw-b')).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    const gw = await readGateway(ns, 'gw-b');
    expect(condition(gw, CONDITION_APPLIED)).toMatchObject({ status: 'False', reason: ROLLOUT_QUEUED });
    expect(condition(gw, CONDITION_APPLIED)?.message).toContain(`1 slot held (${ns}/sllbr-gw-a: rolling)`);
    expect(condition(gw, CONDITION_PROGRAMMED)?.status).toBe('True');

    // Queued again, the line unchanged: the same reads, no write at all.
    const again = await auditLog().begin();
    expect(await reconcile({ namespace: ns, name: 'gw-b' }, budgeted(next))).toMatchObject({ outcome: 'rollout-queued', statusWritten: false, eventsWritten: 0 });
    const againEvents = await again.end();
    expect(countBy(againEvents, { user, verb: WRITE_VERBS })).toEqual({});
    expect(countBy(againEvents, { user, verb: 'list' })).toEqual({ [`${user} list deployments`]: 2, [`${user} list l34routes`]: 1 });

    // A resync pass hands over gw-a (behind, not yet queued), not gw-b
    // (queued, and no slot free): its reconcile finds gw-b's Deployment,
    // which never becomes available either, holding a slot, so gw-a waits.
    const pass = () => invoke({ kind: 'ping' }, handlerDeps(budgeted(next), { namespaces: [ns] }), { type: 'dev.knative.sources.ping', id: `budget-${Date.now()}` });
    expect(await pass()).toMatchObject({ gateway: `${ns}/gw-a`, planned: 2 });
    expect(condition(await readGateway(ns, 'gw-a'), CONDITION_APPLIED)).toMatchObject({ reason: ROLLOUT_QUEUED });
    expect(condition(await readGateway(ns, 'gw-a'), CONDITION_APPLIED)?.message).toContain(`1 slot held (${ns}/sllbr-gw-b: rolling)`);
    // Both queued, no slot: a pass is its lists, and hands over nothing.
    expect(await pass()).toMatchObject({ outcome: 'no-gateway-affected', gateways: 0, planned: 2 });
  });
});
