import { AppsV1Api, type V1Deployment } from '@kubernetes/client-node';
import { startBrokerStandIn } from '../../bench/lib/broker-stand-in.js';
import { parseIncoming } from '../../events/incoming.js';
import { apiServerEvent } from '../../events/outgoing.js';
import { GATEWAYS } from '../../functions/kube/kube-api.js';
import type { ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import type { Template } from '../../functions/reconcile/template.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig } from '../support/cluster.js';
import { condition, configurationSpec, createClass, createConfiguration, createGateway, deleteObject, editSpec, rawDeployment, readDeployment, readGateway } from '../support/fixtures.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { useWorld } from '../support/world.js';
import { withLbImage } from '../support/next-template.js';

// The rollout budget's line moves on (issue 40, item 4), on the real API
// server with the real Deployment controller, through the handler as an
// event reaches it (no sink: the woken Gateways are reconciled in the same
// invocation). The shared control plane has no Node, so an LB Pod never
// runs: a Deployment at 0 replicas completes its rollout at once (settled),
// one at 1 replica never does (its rollout holds a slot), and one scaled
// from 0 to 1 without a pod-template change is degraded (the Deployment
// controller said its rollout completed; then it lacks a Pod). The
// GatewayConfiguration leaves replicas to the Deployment
// (enforceReplicas: false), so the test scales them as an HPA would.
// Everything is judged from the objects: which LB image a Deployment's pod
// template has, its ReplicaSets, the Deployment controller's Progressing
// condition, the Gateways' conditions.

const OTHER_CONTROLLER = 'example.com/another-gateway-controller';
const NEXT_IMAGE = 'registry.example/lb:next';
const APPLIED = 'meridio-2.nordix.org/GatewayConfigurationApplied';

describe('the rollout budget line moves on (LB_ROLLOUT_BUDGET=1)', () => {
  const w = useWorld('line');
  const otherClass = (): string => `other-${w.ns()}`;
  beforeEach(async () => {
    await createClass(otherClass(), OTHER_CONTROLLER);
  });

  const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);
  const budgeted = (template?: Template): ReconcileDeps => ({ ...w.r().deps, ...(template ? { template } : {}), settings: { ...w.r().deps.settings, rolloutBudget: 1 }, namespaces: [w.ns()] });
  /** The shipped template with another LB image: a pod-template change for every Gateway. */
  const nextTemplate = (): Template => withLbImage(w.r().deps.template, NEXT_IMAGE);
  const image = (d: V1Deployment): string | undefined => d.spec?.template.spec?.containers[0]?.image;
  const imageOf = async (gw: string): Promise<string | undefined> => image(await readDeployment(w.ns(), `sllbr-${gw}`));
  const replicaSetsOf = async (gw: string): Promise<string[]> =>
    (await apps().listNamespacedReplicaSet({ namespace: w.ns() })).items
      .filter((rs) => rs.metadata?.ownerReferences?.some((o) => o.kind === 'Deployment' && o.name === `sllbr-${gw}`))
      .map((rs) => rs.metadata?.name ?? '')
      .sort();
  const scale = (gw: string, replicas: number): Promise<unknown> =>
    apps().replaceNamespacedDeploymentScale({ namespace: w.ns(), name: `sllbr-${gw}`, body: { metadata: { name: `sllbr-${gw}`, namespace: w.ns() }, spec: { replicas } } });
  /** The Deployment controller has seen the latest spec and says its rollout completed (Progressing NewReplicaSetAvailable, one ReplicaSet with Pods). */
  const completed = (gw: string, replicas: number) => async (): Promise<true | undefined> => {
    const d = await readDeployment(w.ns(), `sllbr-${gw}`);
    const progressing = d.status?.conditions?.find((c) => c.type === 'Progressing');
    const seen = (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
    return seen && progressing?.reason === 'NewReplicaSetAvailable' && (d.status?.replicas ?? 0) === replicas && (d.status?.updatedReplicas ?? 0) === replicas ? true : undefined;
  };
  /** The Deployment controller has seen the latest spec and started a rollout it has not completed. */
  const rolling = (gw: string) => async (): Promise<true | undefined> => {
    const d = await readDeployment(w.ns(), `sllbr-${gw}`);
    const progressing = d.status?.conditions?.find((c) => c.type === 'Progressing');
    return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) && progressing?.reason !== 'NewReplicaSetAvailable' ? true : undefined;
  };
  const wait = (what: string, check: () => Promise<true | undefined>): Promise<true> => waitFor(what, check, { timeoutMs: 30_000, intervalMs: 100 });

  /** An event as the ApiServerSource sends it in Resource mode, the object as it is now, through the handler. */
  const deliver = async (template: Template, object: Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }, action: 'update' | 'delete' = 'update', sink?: string) => {
    const event = apiServerEvent(action, object, 'https://127.0.0.1');
    return invoke(parseIncoming(event), handlerDeps(budgeted(template), { namespaces: [w.ns()], ...(sink !== undefined && { sink }) }), { type: event.type, id: event.id });
  };
  const gatewayObject = async (gw: string) => ({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', ...(await readGateway(w.ns(), gw)) }) as never;
  const deploymentObject = async (gw: string) => ({ apiVersion: 'apps/v1', kind: 'Deployment', ...(await rawDeployment(w.ns(), `sllbr-${gw}`)) }) as never;

  /** Gateways with LB Deployments at 0 replicas, their rollouts completed, all in sync with the shipped template. */
  const fleet = async (names: string[]): Promise<string> => {
    await createConfiguration(w.ns(), 'cfg', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: false } }));
    for (const name of names) await createGateway(w.ns(), name, w.cls(), 'cfg');
    for (const name of names) expect(await reconcile({ namespace: w.ns(), name }, budgeted())).toMatchObject({ deploymentWritten: true });
    for (const name of names) await scale(name, 0);
    for (const name of names) await wait(`sllbr-${name} completed at 0 replicas`, completed(name, 0));
    return image(await readDeployment(w.ns(), `sllbr-${names[0] ?? ''}`)) ?? '';
  };
  const queuedReason = async (gw: string): Promise<string | undefined> => {
    const c = condition(await readGateway(w.ns(), gw), APPLIED);
    return c ? `${c.status}/${c.reason}` : undefined;
  };

  it('a queued Gateway that moves to another controller\'s class leaves the line: the settled rollout wakes the real next one (the issue\'s case)', async () => {
    const before = await fleet(['g1', 'g2', 'g3']);
    const next = nextTemplate();
    // g1 rolls the new template at 1 replica: a rollout that holds the slot.
    await scale('g1', 1);
    expect(await reconcile({ namespace: w.ns(), name: 'g1' }, budgeted(next))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await wait('sllbr-g1 rolling', rolling('g1'));
    for (const name of ['g2', 'g3']) expect(await reconcile({ namespace: w.ns(), name }, budgeted(next))).toMatchObject({ outcome: 'rollout-queued', deploymentWritten: false });
    const g2Sets = await replicaSetsOf('g2');

    // g2 moves to another controller's class; its event is reconciled.
    await editSpec(GATEWAYS, w.ns(), 'g2', (s) => ({ ...s, gatewayClassName: otherClass() }));
    await deliver(next, await gatewayObject('g2'));
    // g1's rollout settles; its Deployment's event wakes the next in line.
    await scale('g1', 0);
    await wait('sllbr-g1 completed', completed('g1', 0));
    await deliver(next, await deploymentObject('g1'));

    expect(await imageOf('g3')).toBe(NEXT_IMAGE);
    expect(await queuedReason('g3')).toBe('True/Applied');
    // g2 is not ours any more: untouched, and it no longer says it waits for our budget.
    expect(await imageOf('g2')).toBe(before);
    expect(await replicaSetsOf('g2')).toEqual(g2Sets);
    const g2 = await readGateway(w.ns(), 'g2');
    expect(condition(g2, 'Accepted')).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    expect(condition(g2, APPLIED)).toBeUndefined();
  });

  it('each Gateway that leaves the line wakes the next by the same event: a slot holder moving class, a queued one turning invalid, one deleted; a degraded Deployment holds no slot', async () => {
    const names = ['g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7'];
    await fleet(names);
    const next = nextTemplate();
    // g1 rolls first (at 0 replicas: done at once), then loses its Pod
    // without a pod-template change: degraded.
    expect(await reconcile({ namespace: w.ns(), name: 'g1' }, budgeted(next))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await wait('sllbr-g1 completed on the new template', completed('g1', 0));
    await scale('g1', 1);
    await wait('sllbr-g1 degraded: one replica wanted, none available, its rollout complete', completed('g1', 1));

    // Degraded holds no slot: g2 goes, at 1 replica, and holds the slot.
    await scale('g2', 1);
    expect(await reconcile({ namespace: w.ns(), name: 'g2' }, budgeted(next))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await wait('sllbr-g2 rolling', rolling('g2'));
    for (const name of ['g3', 'g4', 'g5', 'g6', 'g7']) expect(await reconcile({ namespace: w.ns(), name }, budgeted(next))).toMatchObject({ outcome: 'rollout-queued' });
    expect(condition(await readGateway(w.ns(), 'g3'), APPLIED)?.message).toContain(`1 slot held (${w.ns()}/sllbr-g2: rolling), no Gateway queued before it`);

    // The slot holder moves to another controller's class: its own event frees the slot and wakes g3.
    await editSpec(GATEWAYS, w.ns(), 'g2', (s) => ({ ...s, gatewayClassName: otherClass() }));
    await deliver(next, await gatewayObject('g2'));
    expect(await imageOf('g3')).toBe(NEXT_IMAGE);
    await wait('sllbr-g3 completed on the new template', completed('g3', 0));

    // g3's settled event is lost (events are hints). g4, first in line,
    // turns invalid: its own event wakes g5. With a sink (the Broker), the
    // wake is a reconcile request handed over, even for one Gateway: the
    // invocation reconciles its own Gateway only.
    await editSpec(GATEWAYS, w.ns(), 'g4', (s) => ({ ...s, infrastructure: { parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'missing' } } }));
    const broker = await startBrokerStandIn();
    try {
      expect(await deliver(next, await gatewayObject('g4'), 'update', broker.url)).toMatchObject({ outcome: 'invalid', gateway: `${w.ns()}/g4`, woke: `${w.ns()}/g5`, next: 'settle' });
      expect(broker.keys).toEqual([`${w.ns()}/g5`]);
    } finally {
      await broker.close();
    }
    expect(condition(await readGateway(w.ns(), 'g4'), 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters' });
    expect(await queuedReason('g4')).toBe('Unknown/Pending');
    expect(await imageOf('g5')).not.toBe(NEXT_IMAGE);
    // The Broker delivers it: g5 goes.
    expect(await reconcile({ namespace: w.ns(), name: 'g5' }, budgeted(next))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    expect(await imageOf('g5')).toBe(NEXT_IMAGE);
    await wait('sllbr-g5 completed on the new template', completed('g5', 0));

    // g6, first in line, is deleted: its delete event wakes g7.
    const g6 = await gatewayObject('g6');
    await deleteObject(GATEWAYS, w.ns(), 'g6');
    await deliver(next, g6, 'delete');
    expect(await imageOf('g7')).toBe(NEXT_IMAGE);
    // g4 (invalid) and g2 (not ours) kept their Deployments' old template.
    expect(await imageOf('g4')).not.toBe(NEXT_IMAGE);
    // g2 had started its rollout before it moved.
    expect(await imageOf('g2')).toBe(NEXT_IMAGE);
  });

  it('with every wake lost, the resync moves the line: past a Gateway that left the class, and past a degraded Deployment', async () => {
    const before = await fleet(['g1', 'g2', 'g3', 'g4']);
    const next = nextTemplate();
    const pass = () => invoke({ kind: 'ping' }, handlerDeps(budgeted(next), { namespaces: [w.ns()] }), { type: 'dev.knative.sources.ping', id: `line-${Date.now()}` });
    await scale('g1', 1);
    expect(await reconcile({ namespace: w.ns(), name: 'g1' }, budgeted(next))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await wait('sllbr-g1 rolling', rolling('g1'));
    // g3 at 1 replica: when its turn comes, its rollout holds the slot.
    await scale('g3', 1);
    for (const name of ['g2', 'g3', 'g4']) expect(await reconcile({ namespace: w.ns(), name }, budgeted(next))).toMatchObject({ outcome: 'rollout-queued' });

    // No event reaches the function from here: g2 moves to another
    // controller's class; g1's rollout completes (at 0 replicas), then it
    // is scaled to 1 again: degraded, no pod-template change.
    await editSpec(GATEWAYS, w.ns(), 'g2', (s) => ({ ...s, gatewayClassName: otherClass() }));
    await scale('g1', 0);
    await wait('sllbr-g1 completed', completed('g1', 0));
    await scale('g1', 1);
    await wait('sllbr-g1 degraded', completed('g1', 1));

    await pass();
    expect(await imageOf('g3')).toBe(NEXT_IMAGE);
    const g2 = await readGateway(w.ns(), 'g2');
    expect(condition(g2, APPLIED)).toBeUndefined();
    expect(await imageOf('g2')).toBe(before);
    // g3 holds the slot now: g4 waits, at this pass and the next.
    await wait('sllbr-g3 rolling', rolling('g3'));
    expect(await pass()).toMatchObject({ outcome: 'no-gateway-affected' });
    expect(await imageOf('g4')).toBe(before);
    expect(await queuedReason('g4')).toBe('False/RolloutQueued');
  });
});
