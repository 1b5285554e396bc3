import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parseIncoming } from '../../events/incoming.js';
import { apiServerEvent } from '../../events/outgoing.js';
import { GATEWAYS } from '../../functions/kube/kube-api.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, createNamespace, deleteNamespace } from '../support/cluster.js';
import { APPLIED, createConfiguration, createRoute, deleteObject, gatewayBody, readDeployment, readGateway } from '../support/fixtures.js';
import { useWorld } from '../support/world.js';

// Names of any legal length, and L34Routes from other namespaces under the
// Gateway API's allowedRoutes, on the real API server.

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

async function createGatewayWith(namespace: string, name: string, className: string, listeners?: unknown[]): Promise<void> {
  const body = gatewayBody(name, className, 'cfg');
  if (listeners) (body.spec as Record<string, unknown>).listeners = listeners;
  await custom().createNamespacedCustomObject({ ...GATEWAYS, namespace, body });
}

describe('a Gateway name of 253 characters', () => {
  const w = useWorld('long');

  it('gets its Deployment, Accepted and Programmed, every condition current; delete and re-create reach the same names', async () => {
    const ns = w.ns();
    const r = w.r();
    const name = `g${'0123456789abcdef'.repeat(16)}`.slice(0, 253);
    expect(name).toHaveLength(253);
    await createConfiguration(ns, 'cfg');
    await createGatewayWith(ns, name, w.cls());
    expect(await reconcile({ namespace: ns, name }, r.deps)).toMatchObject({ outcome: 'applied', next: 'settle' });

    const lb = deploymentName(name);
    expect(lb.length).toBeLessThanOrEqual(63);
    const d = await readDeployment(ns, lb);
    expect(d.metadata?.labels?.app).toBe(lb);
    expect(d.metadata?.labels?.['gateway.networking.k8s.io/gateway-name']?.length).toBeLessThanOrEqual(63);
    const gw = await readGateway(ns, name);
    const generation = gw.metadata.generation;
    for (const c of gw.status?.conditions ?? []) expect(c.observedGeneration).toBe(generation);
    expect(gw.status?.conditions?.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True' });
    expect(gw.status?.conditions?.find((c) => c.type === 'Programmed')).toMatchObject({ status: 'True' });
    expect(gw.status?.conditions?.find((c) => c.type === APPLIED)).toMatchObject({ status: 'True' });
    // Events about it were written too (their names are bounded as well).
    expect((await reconcile({ namespace: ns, name }, r.deps)).outcome).toBe('in-sync');

    // Delete and re-create: the garbage collector removes the old Deployment,
    // and the new Gateway gets one of the same name.
    await deleteObject(GATEWAYS, ns, name);
    await waitFor('the old LB Deployment to be collected', async () => {
      try {
        await readDeployment(ns, lb);
        return undefined;
      } catch {
        return true;
      }
    }, { timeoutMs: 60000 });
    await createGatewayWith(ns, name, w.cls());
    expect(await reconcile({ namespace: ns, name }, r.deps)).toMatchObject({ outcome: 'applied' });
    expect((await readDeployment(ns, lb)).metadata?.name).toBe(lb);
  });
});

describe('L34Routes from other namespaces (allowedRoutes)', () => {
  const w = useWorld('routes');
  let other = '';
  beforeEach(async () => {
    other = await createNamespace('routes-b');
  });
  afterEach(async () => {
    await deleteNamespace(other);
  });

  const addresses = async (ns: string, gw: string): Promise<string[]> => (await readGateway(ns, gw)).status?.addresses?.map((a) => a.value) ?? [];

  it('Same, All and Selector; a namespace label moved in and out is followed at the resync', async () => {
    const ns = w.ns();
    const r = w.r();
    await createConfiguration(ns, 'cfg');
    await createGatewayWith(ns, 'same', w.cls());
    await createGatewayWith(ns, 'all', w.cls(), [{ name: 'l', protocol: 'TCP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } }]);
    await createGatewayWith(ns, 'selected', w.cls(), [{ name: 'l', protocol: 'TCP', port: 80, allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { 'lb.example/shared': 'yes' } } } } }]);
    await createRoute(other, 'to-same', 'same', ['20.0.0.1/32'], ns);
    await createRoute(other, 'to-all', 'all', ['20.0.0.2/32'], ns);
    await createRoute(other, 'to-selected', 'selected', ['20.0.0.3/32'], ns);
    await createRoute(ns, 'local', 'same', ['20.0.0.9/32']);

    for (const gw of ['same', 'all', 'selected']) await reconcile(w.key(gw), r.deps);
    expect(await addresses(ns, 'same')).toEqual(['20.0.0.9']);
    expect(await addresses(ns, 'all')).toEqual(['20.0.0.2']);
    expect(await addresses(ns, 'selected')).toEqual([]);

    // Label the route's namespace into the selector; the resync follows.
    const core = adminConfig().makeApiClient(CoreV1Api);
    const label = async (value: string | null): Promise<void> => {
      const live = await core.readNamespace({ name: other });
      const labels = { ...live.metadata?.labels };
      if (value === null) delete labels['lb.example/shared'];
      else labels['lb.example/shared'] = value;
      await core.replaceNamespace({ name: other, body: { ...live, metadata: { ...live.metadata, labels } } });
    };
    const deps = handlerDeps(r.deps, { namespaces: [ns, other] });
    const resync = async (): Promise<void> => {
      expect((await invoke({ kind: 'ping' }, deps, { type: 'ping', id: 'resync' })).next).toBe('settle');
    };
    await label('yes');
    await resync();
    expect(await addresses(ns, 'selected')).toEqual(['20.0.0.3']);
    await label(null);
    await resync();
    expect(await addresses(ns, 'selected')).toEqual([]);
    expect(await addresses(ns, 'same')).toEqual(['20.0.0.9']);
  });

  it('dispatch maps a route event to the Gateway its parentRef names in another namespace', async () => {
    const ns = w.ns();
    const r = w.r();
    await createConfiguration(ns, 'cfg');
    await createGatewayWith(ns, 'all', w.cls(), [{ name: 'l', protocol: 'TCP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } }]);
    await reconcile(w.key('all'), r.deps);
    const route = { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'L34Route', metadata: { name: 'x', namespace: other }, spec: { parentRefs: [{ name: 'all', namespace: ns }], destinationCIDRs: ['20.0.0.7/32'] } };
    await createRoute(other, 'x', 'all', ['20.0.0.7/32'], ns);
    const deps = handlerDeps(r.deps, { namespaces: [] });
    // The event as the ApiServerSource adapter shapes it, through the front door's parser.
    const incoming = parseIncoming(apiServerEvent('add', route, 'https://127.0.0.1'));
    const handled = await invoke(incoming, deps, { type: 'add', id: 'route' });
    expect(handled).toMatchObject({ next: 'settle', gateway: `${ns}/all` });
    expect(await addresses(ns, 'all')).toEqual(['20.0.0.7']);
  });
});
