import { CustomObjectsApi } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { apiServerEvent, pingEvent } from '../../events/outgoing.js';
import { GATEWAYS, GATEWAY_CONFIGURATIONS, L34ROUTES } from '../../functions/kube/kube-api.js';
import type { Resource } from '../../api/watched-resources.js';
import { APPLIED_CONFIGURATION_GENERATION } from '../../api/names.js';
import { adminConfig, createNamespace, deleteNamespace } from '../support/cluster.js';
import { configurationSpec, createClass, gatewayBody, LB_AVAILABLE, readGateway } from '../support/fixtures.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { controllerIdentity } from '../support/reconciler.js';

// Events are hints: duplicated, reordered or replayed late, they must lead to
// the same end state as the live, ordered stream.

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
type Recorded = CloudEvent<Obj>;

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

/** The same scenario in any namespace; `emit` sees each change as the ApiServerSource would send it. */
async function scenario(ns: string, cls: string, emit: (e: Recorded) => Promise<void>): Promise<void> {
  const create = async (ref: Resource, body: Record<string, unknown>): Promise<void> => {
    await emit(apiServerEvent('add', (await custom().createNamespacedCustomObject({ ...ref, namespace: ns, body })) as Obj, 'https://replay.test'));
  };
  const update = async (ref: Resource, name: string, edit: (o: Record<string, unknown> & { spec: Record<string, unknown> }) => void): Promise<void> => {
    const live = (await custom().getNamespacedCustomObject({ ...ref, namespace: ns, name })) as Record<string, unknown> & { spec: Record<string, unknown> };
    edit(live);
    await emit(apiServerEvent('update', (await custom().replaceNamespacedCustomObject({ ...ref, namespace: ns, name, body: live })) as Obj, 'https://replay.test'));
  };
  const remove = async (ref: Resource, name: string): Promise<void> => {
    const live = (await custom().getNamespacedCustomObject({ ...ref, namespace: ns, name })) as Obj;
    await custom().deleteNamespacedCustomObject({ ...ref, namespace: ns, name });
    await emit(apiServerEvent('delete', live, 'https://replay.test'));
  };
  const route = (name: string, gw: string, vip: string): Record<string, unknown> => ({
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    kind: 'L34Route',
    metadata: { name },
    spec: { parentRefs: [{ name: gw }], destinationCIDRs: [vip], protocols: ['TCP'], priority: 1 },
  });
  await create(GATEWAY_CONFIGURATIONS, { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'GatewayConfiguration', metadata: { name: 'c1' }, spec: configurationSpec() });
  await create(GATEWAYS, gatewayBody('g1', cls, 'c1'));
  await create(GATEWAYS, gatewayBody('g2', cls, 'c1'));
  await create(L34ROUTES, route('r1', 'g1', '20.0.0.1/32'));
  await create(L34ROUTES, route('r2', 'g2', '20.0.0.2/32'));
  await update(GATEWAY_CONFIGURATIONS, 'c1', (o) => { o.spec.horizontalScaling = { replicas: 3, enforceReplicas: true }; });
  await update(L34ROUTES, 'r1', (o) => { o.spec.parentRefs = [{ name: 'g2' }]; });
  await remove(L34ROUTES, 'r2');
  await create(GATEWAYS, gatewayBody('g3', cls, 'nope'));
}

async function post(fn: FunctionProcess, e: CloudEvent<unknown>): Promise<void> {
  expect((await fn.post(e)).status).toBeLessThan(300);
}

/** What the controller decided, without names, uids and times. */
async function endState(ns: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const g of ['g1', 'g2', 'g3']) {
    const gw = await readGateway(ns, g);
    const deployment = (await custom().getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace: ns, name: `sllbr-${g}` }).catch(() => null)) as { spec: { replicas: number }; metadata: { annotations: Record<string, string> } } | null;
    out[g] = {
      // LoadBalancerAvailable follows the deployment controller's own pace.
      conditions: (gw.status?.conditions ?? []).filter((c) => c.type !== LB_AVAILABLE).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message.replaceAll(ns, 'NS') })),
      addresses: gw.status?.addresses ?? [],
      replicas: deployment?.spec.replicas ?? null,
      applied: deployment?.metadata.annotations[APPLIED_CONFIGURATION_GENERATION] ?? null,
    };
  }
  return out;
}

function shuffled<T>(items: T[], seed: number): T[] {
  const a = [...items];
  let s = seed;
  for (let i = a.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

describe('replaying the event stream duplicated and shuffled', () => {
  const namespaces: string[] = [];
  let fn: FunctionProcess | undefined;
  afterEach(async () => {
    await fn?.stop();
    for (const ns of namespaces.splice(0)) await deleteNamespace(ns);
  });

  it('converges to the same end state as the ordered live stream', async () => {
    const live = await createNamespace('rp');
    const replay = await createNamespace('rp');
    namespaces.push(live, replay);
    const cls = `meridio-${live}`;
    await createClass(cls);
    // One controller identity bound in both namespaces' names is enough: the ClusterRole is cluster-wide.
    const controller = await controllerIdentity(live);
    fn = await startFunctionProcess({ kubeconfig: controller.kubeconfig, namespaces: [live, replay] });

    // Live: each event delivered in order, right after its change.
    await scenario(live, cls, (e) => post(fn!, e));
    // Replay: all changes first, then every event twice, in a shuffled order.
    const recorded: Recorded[] = [];
    await scenario(replay, cls, async (e) => { recorded.push(e); });
    for (const e of shuffled([...recorded, ...recorded], 7)) await post(fn, e);

    const expected = await endState(live);
    expect(await endState(replay)).toEqual(expected);
    // And the end state is the right one, not merely the same.
    expect(expected).toMatchObject({
      g1: { addresses: [], replicas: 3, applied: '2' },
      g2: { addresses: [{ type: 'IPAddress', value: '20.0.0.1' }], replicas: 3, applied: '2' },
      g3: { replicas: null, applied: null },
    });
    // A resync changes nothing further.
    await post(fn, pingEvent());
    expect(await endState(replay)).toEqual(expected);
  });
});
