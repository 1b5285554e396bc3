import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubernetesObjectApi, PatchStrategy, Watch, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { CONDITION_APPLIED } from '../../api/names.js';
import { pingEvent } from '../../events/outgoing.js';
import { PING_TYPE } from '../../events/types.js';
import { DeploymentSchema, GatewaySchema, type Deployment, type Gateway } from '../../api/schemas.js';
import { GATEWAY_CLASSES, GATEWAYS } from '../../functions/kube/kube-api.js';
import { startLocalEventSource, type LocalEventSource } from '../../tools/dev/local-event-source.js';
import { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { repoRoot } from '../../tools/harness/repo-root.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { adminConfig, createNamespace, useClusterInfo } from '../support/cluster.js';
import { deleteClusterScoped } from '../support/cluster-scoped.js';
import { configurationSpec, createConfiguration, createGateway, deleteObject, editSpec } from '../support/fixtures.js';
import { CONTROLLER_NAME, controllerIdentity } from '../support/reconciler.js';

// The rollout budget on a control plane whose fake Nodes run the LB Pods to
// Ready (kube-scheduler + KWOK, as the conformance test's plane), with the
// real Deployment controller rolling them and judging progress against a
// short progressDeadlineSeconds in the test's LB template. The function runs
// with LB_ROLLOUT_BUDGET=1 and a resync only at its start (the local event
// source pings once when it starts, then not for ten minutes): whatever
// moves the line after that is an event's doing.
//
// "How many rolled at once" is judged from the Deployment controller's
// objects alone, sampled from watches: a Deployment's rollout is open from
// the moment a ReplicaSet of a newer revision appears until that ReplicaSet
// has all the Deployment's replicas available and no older one has Pods.
// Only Deployments of Gateways of this controller's class count.
//
// 1. A template change rolls one LB Deployment at a time; every waiting
//    Gateway is RolloutQueued before its turn.
// 2. A template whose Pods cannot be scheduled (a nodeSelector the Nodes do
//    not have yet): the first rollout reaches ProgressDeadlineExceeded and
//    keeps its slot, the queued Gateways say so. Then the stall cases of
//    issue 40: the first queued Gateway moves to another controller's
//    class, the next turns invalid, the next is deleted. When the Nodes get
//    the label, the stuck rollout completes and its event wakes the only
//    Gateway still in line, not one of those that left.
// 3. A Deployment degraded without a pod-template change (its Pod turned
//    unready, as a crash loop leaves it) holds no slot: the next template
//    change rolls past it.

const CLASS = 'meridio-rollout';
const OTHER_CLASS = 'another-controllers-class';
const GATEWAYS_ = ['gw-a', 'gw-b', 'gw-c', 'gw-d', 'gw-e'];
const BUDGET = 1;
const DEADLINE_SECONDS = 12;
const LB_IMAGE = 'registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer:latest';
const GATE_LABEL = 'meridio-rollout-gate';
const CREATE_GATE_LABEL = 'meridio-rollout-create-gate';
const FAKE_NODES = ['fake-node-1', 'fake-node-2'];

interface ReplicaSetView {
  name: string;
  deployment: string;
  revision: number;
  replicas: number;
  available: number;
}

const lbImage = (d: Deployment): string | undefined => d.spec.template.spec?.containers?.find((c) => c.name === 'loadbalancer')?.image;
const applied = (gw: Gateway | undefined) => (gw?.status?.conditions ?? []).find((c) => c.type === CONDITION_APPLIED);
const progressing = (d: Deployment) => (d.status?.conditions ?? []).find((c) => c.type === 'Progressing');
/** The Deployment controller has seen the latest spec and says its rollout completed, every replica updated and available. */
const completed = (d: Deployment): boolean => {
  const s = d.status ?? {};
  const wanted = d.spec.replicas ?? 1;
  return (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) && progressing(d)?.reason === 'NewReplicaSetAvailable' && s.updatedReplicas === wanted && s.replicas === wanted && s.availableReplicas === wanted;
};

describe('the rollout budget, with real rollouts on fake Nodes', () => {
  let cp: ControlPlane | undefined;
  let fn: FunctionProcess | undefined;
  let source: LocalEventSource | undefined;
  let ns = '';
  let kubeconfig = '';
  const dir = mkdtempSync(join(tmpdir(), 'rollout-budget-'));
  const deployments = new Map<string, Deployment>();
  const gateways = new Map<string, Gateway>();
  const replicaSets = new Map<string, ReplicaSetView>();
  /** Per Deployment: the newest revision seen complete (available, older ReplicaSets empty). */
  const completedRevision = new Map<string, number>();
  const watches: { abort(): void }[] = [];
  let maxRolling = 0;
  let rollingAtMax: string[] = [];
  /** Gateways seen RolloutQueued, and the LB image their Deployment had then. */
  const seenQueued = new Map<string, Set<string>>();
  /** Queued messages seen. */
  const queuedMessages: string[] = [];
  /** Called with its Deployment's name when a ReplicaSet first appears. */
  let newReplicaSet: ((deployment: string) => void) | undefined;

  /** The LB Deployments of our Gateways whose rollout is open, from their ReplicaSets. */
  const openRollouts = (): string[] => {
    const open: string[] = [];
    for (const [name, d] of deployments) {
      const owner = (d.metadata.ownerReferences ?? []).find((o) => o.kind === 'Gateway')?.name ?? '';
      const gw = gateways.get(owner);
      if (gw === undefined || gw.spec.gatewayClassName !== CLASS || gw.metadata.deletionTimestamp !== undefined) continue;
      const sets = [...replicaSets.values()].filter((rs) => rs.deployment === name);
      const newest = sets.reduce<ReplicaSetView | undefined>((a, b) => (a === undefined || b.revision > a.revision ? b : a), undefined);
      if (newest === undefined) continue;
      const done = newest.available >= (d.spec.replicas ?? 1) && sets.every((rs) => rs === newest || rs.replicas === 0);
      if (done) completedRevision.set(name, Math.max(completedRevision.get(name) ?? 0, newest.revision));
      if (newest.revision > (completedRevision.get(name) ?? 0)) open.push(name);
    }
    return open.sort();
  };
  const sample = (): void => {
    const open = openRollouts();
    if (open.length > maxRolling) {
      maxRolling = open.length;
      rollingAtMax = open;
    }
  };
  const resetSamples = (): void => {
    sample();
    maxRolling = openRollouts().length;
    rollingAtMax = openRollouts();
  };

  function template(image: string, nodeSelector?: Record<string, string>): string {
    let text = readFileSync(join(repoRoot(), 'infra', 'templates', 'lb-deployment.yaml'), 'utf8').replace(LB_IMAGE, image);
    // A short progress deadline: the Deployment controller says
    // ProgressDeadlineExceeded after this long without progress.
    text = text.replace(/^spec:\n/m, `spec:\n  progressDeadlineSeconds: ${DEADLINE_SECONDS}\n`);
    if (nodeSelector) {
      // Under the pod spec's first key: a Pod no Node can take never becomes ready.
      text = text.replace(/\n(\s+)serviceAccountName:/, (_m, indent: string) => `\n${indent}nodeSelector:\n${Object.entries(nodeSelector).map(([k, v]) => `${indent}  ${k}: "${v}"`).join('\n')}\n${indent}serviceAccountName:`);
    }
    const file = join(dir, `lb-${Date.now()}.yaml`);
    writeFileSync(file, text);
    return file;
  }

  async function serveWith(templateFile: string): Promise<void> {
    await source?.stop();
    await fn?.stop();
    fn = await startFunctionProcess({ kubeconfig, namespaces: [ns], logLevel: 'info', env: { TEMPLATE_PATH: templateFile, LB_ROLLOUT_BUDGET: String(BUDGET) } });
    const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined };
    // One resync when it starts (what a new Revision's first ping gives), then events only.
    source = await startLocalEventSource({ kc: adminConfig(), sink: `${fn.url}/`, namespaces: [ns], resyncIntervalMs: 600000, log: quiet });
  }

  const allOn = (image: string, names: string[] = GATEWAYS_) => async (): Promise<true | undefined> => {
    const done = names.every((g) => {
      const d = deployments.get(`sllbr-${g}`);
      return d !== undefined && lbImage(d) === image && completed(d) && applied(gateways.get(g))?.status === 'True';
    });
    if (done) return true;
    // What waitFor reports at its deadline.
    throw new Error(state());
  };

  const state = (): string =>
    [...new Set([...GATEWAYS_, ...[...gateways.keys()]])].map((g) => {
      const d = deployments.get(`sllbr-${g}`);
      const a = applied(gateways.get(g));
      return `${g} (${gateways.get(g)?.spec.gatewayClassName ?? 'gone'}): ${d ? `${lbImage(d)} ${JSON.stringify(d.status ?? {})}` : 'no Deployment'}; Applied ${a ? `${a.status} ${a.reason} ${a.message}` : '-'}`;
    }).join('\n') + `\nopen rollouts: ${openRollouts().join(', ')}\nfunction log tail: ${JSON.stringify((fn?.logs ?? []).slice(-5))}`;

  const deploymentRevisionOf = (g: string): number => Math.max(0, ...[...replicaSets.values()].filter((rs) => rs.deployment === `sllbr-${g}`).map((rs) => rs.revision));

  beforeAll(async () => {
    cp = await ControlPlane.start({ fakeNodes: FAKE_NODES, log: () => undefined });
    useClusterInfo(cp.info);
    ns = await createNamespace('rollout');
    kubeconfig = (await controllerIdentity(ns)).kubeconfig;
    await createConfiguration(ns, 'lb', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: true } }));
    const custom = adminConfig().makeApiClient(CustomObjectsApi);
    for (const [name, controllerName] of [[CLASS, CONTROLLER_NAME], [OTHER_CLASS, 'example.com/another-gateway-controller']] as const) {
      await custom.createClusterCustomObject({ ...GATEWAY_CLASSES, body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name }, spec: { controllerName } } });
    }
    // Every change of every LB Deployment, ReplicaSet and Gateway, as it happens.
    const watch = new Watch(adminConfig());
    watches.push(
      await watch.watch(`/apis/apps/v1/namespaces/${ns}/deployments`, {}, (type, obj) => {
        const d = DeploymentSchema.parse(obj);
        if (type === 'DELETED') deployments.delete(d.metadata.name);
        else deployments.set(d.metadata.name, d);
        sample();
      }, () => undefined),
      await watch.watch(`/apis/apps/v1/namespaces/${ns}/replicasets`, {}, (type, obj: { metadata: { name: string; annotations?: Record<string, string>; ownerReferences?: { kind: string; name: string }[] }; status?: { replicas?: number; availableReplicas?: number } }) => {
        if (type === 'DELETED') replicaSets.delete(obj.metadata.name);
        else {
          const deployment = obj.metadata.ownerReferences?.find((o) => o.kind === 'Deployment')?.name ?? '';
          if (!replicaSets.has(obj.metadata.name)) newReplicaSet?.(deployment);
          replicaSets.set(obj.metadata.name, {
            name: obj.metadata.name,
            deployment,
            revision: Number(obj.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0),
            replicas: obj.status?.replicas ?? 0,
            available: obj.status?.availableReplicas ?? 0,
          });
        }
        sample();
      }, () => undefined),
      await watch.watch(`/apis/${GATEWAYS.group}/${GATEWAYS.version}/namespaces/${ns}/${GATEWAYS.plural}`, {}, (type, obj) => {
        const gw = GatewaySchema.parse(obj);
        if (type === 'DELETED') gateways.delete(gw.metadata.name);
        else gateways.set(gw.metadata.name, gw);
        const a = applied(gw);
        const d = deployments.get(`sllbr-${gw.metadata.name}`);
        if (a?.status === 'False' && a.reason === 'RolloutQueued') {
          queuedMessages.push(`${gw.metadata.name}: ${a.message}`);
          if (d) {
            const seen = seenQueued.get(gw.metadata.name) ?? new Set<string>();
            seen.add(lbImage(d) ?? '');
            seenQueued.set(gw.metadata.name, seen);
          }
        }
        sample();
      }, () => undefined),
    );
    // The first template's Pods wait for a Node label: creates never wait,
    // so all five new Deployments are rolling out at once, and the sampler
    // must see that (it can see a budget broken).
    await serveWith(template('lb:v1', { [CREATE_GATE_LABEL]: 'open' }));
    for (const g of GATEWAYS_) await createGateway(ns, g, CLASS, 'lb');
    await waitFor('five new LB Deployments rolling out at once', () => (openRollouts().length === GATEWAYS_.length ? true : undefined), { timeoutMs: 60000, intervalMs: 200 });
    expect(maxRolling).toBe(GATEWAYS_.length);
    for (const name of FAKE_NODES) await labelNode(name, { [CREATE_GATE_LABEL]: 'open' });
    await waitFor('five Gateways applied, their LB Deployments rolled out on lb:v1', allOn('lb:v1'), { timeoutMs: 120000, intervalMs: 200 });
    // The test template's deadline reached the Deployments.
    expect(GATEWAYS_.map((g) => deployments.get(`sllbr-${g}`)?.spec.progressDeadlineSeconds)).toEqual(GATEWAYS_.map(() => DEADLINE_SECONDS));
  }, 300000);

  afterAll(async () => {
    for (const w of watches) w.abort();
    await source?.stop();
    await fn?.stop();
    // What the test registered lives on the private control plane: delete it before that stops.
    await deleteClusterScoped();
    const custom = adminConfig().makeApiClient(CustomObjectsApi);
    for (const name of [CLASS, OTHER_CLASS]) await custom.deleteClusterCustomObject({ ...GATEWAY_CLASSES, name }).catch(() => undefined);
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (cp) expect(cp.leftovers()).toEqual([]);
  }, 120000);

  it('a template change rolls one LB Deployment at a time (its ReplicaSets say so); each waiting Gateway is RolloutQueued until its turn', async () => {
    resetSamples();
    seenQueued.clear();
    await serveWith(template('lb:v2'));
    await waitFor('all five rolled out on lb:v2 and applied', allOn('lb:v2'), { timeoutMs: 240000, intervalMs: 200 });
    expect({ maxRolling, rollingAtMax: rollingAtMax.length }).toEqual({ maxRolling: BUDGET, rollingAtMax: BUDGET });
    // Each Deployment got exactly one new ReplicaSet revision.
    expect(GATEWAYS_.map(deploymentRevisionOf)).toEqual(GATEWAYS_.map(() => 2));
    // Four of the five waited, while their Deployment still had the old image.
    const waited = GATEWAYS_.filter((g) => seenQueued.get(g)?.has('lb:v1'));
    expect(waited).toHaveLength(GATEWAYS_.length - BUDGET);
  }, 300000);

  it('a stuck rollout (ProgressDeadlineExceeded) keeps its slot; Gateways that leave the class, turn invalid or are deleted leave the line, and the settled rollout wakes the one still in line', async () => {
    resetSamples();
    queuedMessages.length = 0;
    const before = Object.fromEntries(GATEWAYS_.map((g) => [g, deploymentRevisionOf(g)]));
    // Pods no Node takes (yet): the first rollout sticks, the four others wait.
    await serveWith(template('lb:v3', { [GATE_LABEL]: 'open' }));
    await waitFor('gw-a rolling lb:v3 and past its progress deadline, four queued', () => {
      const a = deployments.get('sllbr-gw-a');
      const queued = GATEWAYS_.filter((g) => applied(gateways.get(g))?.reason === 'RolloutQueued');
      return a && lbImage(a) === 'lb:v3' && progressing(a)?.status === 'False' && progressing(a)?.reason === 'ProgressDeadlineExceeded' && queued.length === 4 ? true : undefined;
    }, { timeoutMs: 120000, intervalMs: 200 });
    expect(openRollouts()).toEqual(['sllbr-gw-a']);

    // A queued Gateway's next reconcile (an edit of its labels) says what holds the slot.
    await editGatewayMetadata('gw-e');
    await waitFor('gw-e says the slot is held by a stuck rollout', () => (applied(gateways.get('gw-e'))?.message?.includes(`1 slot held (${ns}/sllbr-gw-a: stuck: progress deadline exceeded)`) ? true : undefined), { timeoutMs: 30000, intervalMs: 200 });

    // The stall cases: gw-b moves to another controller's class, gw-c turns invalid, gw-d is deleted.
    await editSpec(GATEWAYS, ns, 'gw-b', (s) => ({ ...s, gatewayClassName: OTHER_CLASS }));
    await editSpec(GATEWAYS, ns, 'gw-c', (s) => ({ ...s, infrastructure: { parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'no-such-configuration' } } }));
    await deleteObject(GATEWAYS, ns, 'gw-d');
    await waitFor('gw-b no longer queued, gw-c not accepted, gw-d gone', () => {
      const b = gateways.get('gw-b');
      const c = gateways.get('gw-c');
      const bAccepted = (b?.status?.conditions ?? []).find((x) => x.type === 'Accepted');
      const cAccepted = (c?.status?.conditions ?? []).find((x) => x.type === 'Accepted');
      if (bAccepted?.status === 'Unknown' && applied(b) === undefined && cAccepted?.status === 'False' && applied(c)?.reason === 'Pending' && !gateways.has('gw-d')) return true;
      throw new Error(state());
    }, { timeoutMs: 60000, intervalMs: 200 });
    // A resync now hands over no one: the stuck rollout holds the slot.
    const ping = pingEvent();
    await fn?.post(ping);
    expect(await fn?.handled(ping.id, 30000)).toMatchObject({ outcome: 'no-gateway-affected' });
    expect(openRollouts()).toEqual(['sllbr-gw-a']);
    expect(applied(gateways.get('gw-e'))?.reason).toBe('RolloutQueued');

    // The Nodes get the label: gw-a's Pod is scheduled, its rollout
    // completes, and its Deployment's event wakes gw-e, the only one left
    // in line. No resync is due: the event did it.
    for (const name of FAKE_NODES) await labelNode(name, { [GATE_LABEL]: 'open' });
    await waitFor('gw-a and gw-e rolled out on lb:v3 and applied', allOn('lb:v3', ['gw-a', 'gw-e']), { timeoutMs: 120000, intervalMs: 200 });
    expect(maxRolling).toBe(BUDGET);
    // The Gateways that left the line kept their Deployments as they were: no new ReplicaSet.
    expect(['gw-b', 'gw-c'].map((g) => [g, deploymentRevisionOf(g), lbImage(deployments.get(`sllbr-${g}`) as Deployment)])).toEqual([
      ['gw-b', before['gw-b'], 'lb:v2'],
      ['gw-c', before['gw-c'], 'lb:v2'],
    ]);
    expect((fn?.logs ?? []).filter((l) => l.type === PING_TYPE && l.msg === 'event handled')).toHaveLength(2);
  }, 420000);

  it('a Deployment degraded without a pod-template change (its Pod unready) holds no slot: the next template change rolls past it', async () => {
    // gw-e's Pod turns unready (as a crash loop leaves it): its Deployment is
    // degraded, its rollout still complete for the Deployment controller.
    await makePodsUnready('sllbr-gw-e');
    await waitFor('sllbr-gw-e degraded: 0/1 available, Progressing NewReplicaSetAvailable', () => {
      const d = deployments.get('sllbr-gw-e');
      if (d && (d.status?.availableReplicas ?? 0) === 0 && progressing(d)?.reason === 'NewReplicaSetAvailable' && (d.status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0)) return true;
      throw new Error(state());
    }, { timeoutMs: 60000, intervalMs: 200 });
    resetSamples();
    queuedMessages.length = 0;
    // gw-e's availability when gw-a's rollout starts (its new ReplicaSet appears).
    let eAvailableWhenAStarted: number | undefined;
    newReplicaSet = (deployment) => {
      if (deployment === 'sllbr-gw-a' && eAvailableWhenAStarted === undefined) eAvailableWhenAStarted = deployments.get('sllbr-gw-e')?.status?.availableReplicas ?? 0;
    };
    await serveWith(template('lb:v4'));
    // gw-a goes first while gw-e is degraded; then gw-e, whose own rollout replaces its unready Pod.
    await waitFor('gw-a and gw-e rolled out on lb:v4', allOn('lb:v4', ['gw-a', 'gw-e']), { timeoutMs: 240000, intervalMs: 200 });
    expect(maxRolling).toBe(BUDGET);
    expect(eAvailableWhenAStarted).toBe(0);
    // No queued message ever named the degraded Deployment as holding a slot.
    expect(queuedMessages.filter((m) => m.includes('sllbr-gw-e:'))).toEqual([]);
  }, 300000);

  async function editGatewayMetadata(name: string): Promise<void> {
    const custom = adminConfig().makeApiClient(CustomObjectsApi);
    const live = (await custom.getNamespacedCustomObject({ ...GATEWAYS, namespace: ns, name })) as { metadata: { labels?: Record<string, string> } };
    await custom.replaceNamespacedCustomObject({ ...GATEWAYS, namespace: ns, name, body: { ...live, metadata: { ...live.metadata, labels: { ...live.metadata.labels, touched: String(Date.now()) } } } });
  }

  async function labelNode(name: string, labels: Record<string, string>): Promise<void> {
    await adminConfig().makeApiClient(KubernetesObjectApi).patch({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } } as KubernetesObject, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
  }

  /** Every Pod of the Deployment's ReplicaSets: Ready False, as the kubelet reports a failing readiness probe (KWOK leaves a running Pod alone). */
  async function makePodsUnready(deployment: string): Promise<void> {
    const core = adminConfig().makeApiClient(CoreV1Api);
    const sets = new Set([...replicaSets.values()].filter((rs) => rs.deployment === deployment).map((rs) => rs.name));
    const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) => p.metadata?.deletionTimestamp === undefined && p.metadata?.ownerReferences?.some((o) => sets.has(o.name)));
    expect(pods.length).toBeGreaterThan(0);
    for (const pod of pods) {
      const unready = (p: V1Pod): V1Pod => ({
        ...p,
        status: {
          ...p.status,
          conditions: (p.status?.conditions ?? []).map((c) => (c.type === 'Ready' || c.type === 'ContainersReady' ? { ...c, status: 'False', lastTransitionTime: new Date() } : c)),
          containerStatuses: (p.status?.containerStatuses ?? []).map((s) => ({ ...s, ready: false })),
        },
      });
      const name = pod.metadata?.name ?? '';
      await core.replaceNamespacedPodStatus({ namespace: ns, name, body: unready(await core.readNamespacedPod({ namespace: ns, name })) });
      const now = await core.readNamespacedPod({ namespace: ns, name });
      expect([name, now.status?.phase, now.status?.conditions?.find((c) => c.type === 'Ready')?.status]).toEqual([name, 'Running', 'False']);
    }
  }
});
