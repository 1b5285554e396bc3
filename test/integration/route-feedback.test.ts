import { CustomObjectsApi } from '@kubernetes/client-node';
import { GATEWAYS, L34ROUTES } from '../../functions/kube/kube-api.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { routeBody } from '../../tools/gateway-manifest.js';
import { adminConfig, auditLog, createNamespace, deleteNamespace } from '../support/cluster.js';
import { createClass, createConfiguration, gatewayBody, listEvents } from '../support/fixtures.js';
import { useWorld } from '../support/world.js';

// Warning Events on L34Routes that name a Gateway key and do not attach, on
// the real API server, as the controller's ServiceAccount under the shipped
// ClusterRole: one Event object per route and verdict however often the key
// is reconciled, regarding the route (with its uid) in the route's namespace,
// never a write to the route, and zero writes on a repeated no-op.

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

interface RouteObject {
  metadata: { uid: string; resourceVersion: string; namespace: string; name: string };
}

interface StoredEvent {
  type: string;
  reason: string;
  note: string;
  reportingController: string;
  series?: unknown;
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
}

async function createRoute(namespace: string, name: string, parentRef: Record<string, string>): Promise<RouteObject> {
  const body = routeBody(name, parentRef.name ?? '', ['20.0.0.1/32']);
  (body.spec as Record<string, unknown>).parentRefs = [parentRef];
  return (await custom().createNamespacedCustomObject({ ...L34ROUTES, namespace, body })) as RouteObject;
}

async function readRoute(namespace: string, name: string): Promise<RouteObject> {
  return (await custom().getNamespacedCustomObject({ ...L34ROUTES, namespace, name })) as RouteObject;
}

/** The Events regarding one route, in its namespace. */
async function eventsAbout(route: RouteObject): Promise<StoredEvent[]> {
  const all = (await listEvents(route.metadata.namespace)) as unknown as StoredEvent[];
  return all.filter((e) => e.regarding?.kind === 'L34Route' && e.regarding.name === route.metadata.name);
}

describe('Warning Events on L34Routes that do not attach (real API server)', () => {
  const w = useWorld('rfb');
  let other = '';
  beforeEach(async () => {
    other = await createNamespace('rfb-b');
  });
  afterEach(async () => {
    await deleteNamespace(other);
  });

  /** Reconciles the key three times; then the route has exactly one Event, as expected, and is unchanged. */
  async function oneEventAfterRepeats(key: { namespace: string; name: string }, route: RouteObject, reason: string): Promise<StoredEvent> {
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await reconcile(key, w.r().deps));
    const events = await eventsAbout(route);
    expect(events.map((e) => e.reason)).toEqual([reason]);
    const [event] = events;
    if (!event) throw new Error('no Event');
    expect(event).toMatchObject({ type: 'Warning', reportingController: w.r().deps.settings.controllerName });
    expect(event.regarding).toEqual({ apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'L34Route', namespace: route.metadata.namespace, name: route.metadata.name, uid: route.metadata.uid });
    // Said once, never bumped: no series.
    expect(event.series).toBeUndefined();
    expect((await readRoute(route.metadata.namespace, route.metadata.name)).metadata.resourceVersion).toBe(route.metadata.resourceVersion);
    return event;
  }

  it('(a) a parentRef naming no Gateway: GatewayNotFound, one Event after repeated reconciles', async () => {
    const ns = w.ns();
    const route = await createRoute(ns, 'lost', { name: 'ghost' });
    const event = await oneEventAfterRepeats(w.key('ghost'), route, 'GatewayNotFound');
    expect(event.note).toContain(`Gateway ${ns}/ghost, which does not exist`);
  });

  it('(b) a Gateway of another controller: GatewayNotOurs, one Event after repeated reconciles', async () => {
    const ns = w.ns();
    const theirs = `other-${ns}`;
    await createClass(theirs, 'example.com/other-controller');
    await custom().createNamespacedCustomObject({ ...GATEWAYS, namespace: ns, body: gatewayBody('theirs', theirs) });
    const route = await createRoute(ns, 'to-theirs', { name: 'theirs' });
    const event = await oneEventAfterRepeats(w.key('theirs'), route, 'GatewayNotOurs');
    expect(event.note).toContain('of controller example.com/other-controller');
  });

  it('(c) ours, not admitted (allowedRoutes, sectionName): one Event each, none for the route that attaches; then a no-op writes nothing', async () => {
    const ns = w.ns();
    await createConfiguration(ns, 'cfg');
    const body = gatewayBody('gw', w.cls(), 'cfg');
    (body.spec as Record<string, unknown>).listeners = [
      { name: 'same', protocol: 'TCP', port: 80 },
      { name: 'open', protocol: 'TCP', port: 81, allowedRoutes: { namespaces: { from: 'All' } } },
      { name: 'http-only', protocol: 'TCP', port: 82, allowedRoutes: { kinds: [{ kind: 'HTTPRoute' }] } },
    ];
    await custom().createNamespacedCustomObject({ ...GATEWAYS, namespace: ns, body });
    const attaches = await createRoute(other, 'attaches', { name: 'gw', namespace: ns, sectionName: 'open' });
    const namespaceRefused = await createRoute(other, 'same-only', { name: 'gw', namespace: ns, sectionName: 'same' });
    const kindRefused = await createRoute(ns, 'kind', { name: 'gw', sectionName: 'http-only' });
    const noListener = await createRoute(ns, 'nope', { name: 'gw', sectionName: 'nope' });

    expect(await reconcile(w.key('gw'), w.r().deps)).toMatchObject({ outcome: 'applied' });
    expect((await oneEventAfterRepeats(w.key('gw'), namespaceRefused, 'NotAllowedByListeners')).note).toContain('listener same: allowedRoutes.namespaces.from is Same');
    expect((await oneEventAfterRepeats(w.key('gw'), kindRefused, 'NotAllowedByListeners')).note).toContain('allowedRoutes.kinds lists gateway.networking.k8s.io/HTTPRoute');
    expect((await oneEventAfterRepeats(w.key('gw'), noListener, 'NoMatchingParent')).note).toContain('sectionName nope names no listener');
    expect(await eventsAbout(attaches)).toEqual([]);

    // A repeated no-op: no write of any kind; the price of saying each
    // Warning once is one get per route that does not attach.
    const window = await auditLog().begin();
    const res = await reconcile(w.key('gw'), w.r().deps);
    const audit = await window.end();
    expect(res).toMatchObject({ outcome: 'in-sync', deploymentWritten: false, statusWritten: false, eventsWritten: 0 });
    const user = w.r().username;
    expect(countBy(audit, { user, verb: WRITE_VERBS })).toEqual({});
    expect(countBy(audit, { user, resource: 'events' })).toEqual({ [`${user} get events`]: 3 });
  });

  it('a no-op reconcile of a key that names no Gateway writes nothing once its routes have their Event', async () => {
    const ns = w.ns();
    await createRoute(ns, 'lost-1', { name: 'ghost' });
    await createRoute(ns, 'lost-2', { name: 'ghost' });
    expect(await reconcile(w.key('ghost'), w.r().deps)).toMatchObject({ outcome: 'not-found', eventsWritten: 2 });
    const window = await auditLog().begin();
    expect(await reconcile(w.key('ghost'), w.r().deps)).toMatchObject({ outcome: 'not-found', eventsWritten: 0 });
    const audit = await window.end();
    const user = w.r().username;
    expect(countBy(audit, { user, verb: WRITE_VERBS })).toEqual({});
    expect(countBy(audit, { user, resource: 'events' })).toEqual({ [`${user} get events`]: 2 });
  });
});
