import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { eventTargets } from '../support/handler-deps.js';
import { GATEWAY_CLASSES, GATEWAY_CONFIGURATIONS, L34ROUTES } from '../../functions/kube/kube-api.js';
import { APPLIED_CONFIGURATION_NAME } from '../../api/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import type { Incoming } from '../../events/incoming.js';
import { adminConfig } from '../support/cluster.js';
import { APPLIED, condition, configurationSpec, createClass, createConfiguration, createGateway, createRoute, deleteObject, deploymentObserved, editSpec, rawDeployment, readGateway } from '../support/fixtures.js';
import { CONTROLLER_NAME } from '../support/reconciler.js';
import { storedListeners } from '../../functions/reconcile/plan/listener-status.js';
import { useWorld } from '../support/world.js';

// GEP-1867 on the real API server: a GatewayClass's parametersRef is the
// default GatewayConfiguration of its Gateways that have none of their own.
// Also the listener status that follows L34Route attach and detach.

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

function ref(name: string, namespace: string): Record<string, string> {
  return { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name, namespace };
}

async function createClassWithRef(name: string, parametersRef: Record<string, string>): Promise<void> {
  await createClass(name, CONTROLLER_NAME, { parametersRef });
}

async function switchClassRef(name: string, parametersRef: Record<string, string>): Promise<void> {
  const live = (await custom().getClusterCustomObject({ ...GATEWAY_CLASSES, name })) as { spec: Record<string, unknown> };
  await custom().replaceClusterCustomObject({ ...GATEWAY_CLASSES, name, body: { ...live, spec: { ...live.spec, parametersRef } } });
}

const replicasOf = async (ns: string, gw: string): Promise<number> => ((await rawDeployment(ns, `sllbr-${gw}`)) as unknown as { spec: { replicas: number } }).spec.replicas;
const appliedName = async (ns: string, gw: string): Promise<string | undefined> => (await rawDeployment(ns, `sllbr-${gw}`)).metadata.annotations?.[APPLIED_CONFIGURATION_NAME];

function event(kind: 'GatewayClass' | 'GatewayConfiguration', name: string, namespace?: string): Extract<Incoming, { kind: 'apiserver' }> {
  const apiVersion = kind === 'GatewayClass' ? 'gateway.networking.k8s.io/v1' : 'meridio-2.nordix.org/v1alpha1';
  return { kind: 'apiserver', mode: 'ref', action: 'update', resource: { apiVersion, kind, name, namespace }, object: undefined };
}

describe('GatewayClass parametersRef as the default', () => {
  const w = useWorld('clsref');

  it('two classes with their own default; Gateways with and without their own reference render from the right one; switching a class re-applies its Gateways', async () => {
    const ns = w.ns();
    const [a, b] = [`a-${ns}`, `b-${ns}`];
    await createConfiguration(ns, 'cfg-a', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: true } }));
    await createConfiguration(ns, 'cfg-b', configurationSpec({ horizontalScaling: { replicas: 2, enforceReplicas: true } }));
    await createConfiguration(ns, 'cfg-own', configurationSpec({ horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    await createClassWithRef(a, ref('cfg-a', ns));
    await createClassWithRef(b, ref('cfg-b', ns));
    await createGateway(ns, 'a-plain', a);
    await createGateway(ns, 'a-own', a, 'cfg-own');
    await createGateway(ns, 'b-plain', b);
    for (const gw of ['a-plain', 'a-own', 'b-plain']) expect((await reconcile(w.key(gw), w.r().deps)).outcome).toBe('applied');

    expect([await replicasOf(ns, 'a-plain'), await replicasOf(ns, 'a-own'), await replicasOf(ns, 'b-plain')]).toEqual([1, 3, 2]);
    expect([await appliedName(ns, 'a-plain'), await appliedName(ns, 'a-own'), await appliedName(ns, 'b-plain')]).toEqual(['cfg-a', 'cfg-own', 'cfg-b']);
    expect(condition(await readGateway(ns, 'a-plain'), APPLIED)).toMatchObject({ status: 'True', message: expect.stringContaining('GatewayConfiguration cfg-a generation 1') });

    // Switch class a to cfg-b: the class event names both of its Gateways; only the one without its own reference changes.
    await switchClassRef(a, ref('cfg-b', ns));
    const keys = (await eventTargets(w.r().api, { controllerName: CONTROLLER_NAME, namespaces: [ns] }, event('GatewayClass', a))).map((t) => t.key);
    expect(keys).toEqual([w.key('a-own'), w.key('a-plain')]);
    const results = await Promise.all(keys.map(async (k) => [k.name, (await reconcile(k, w.r().deps)).outcome]));
    expect(Object.fromEntries(results)).toEqual({ 'a-plain': 'applied', 'a-own': 'in-sync' });
    expect(await replicasOf(ns, 'a-plain')).toBe(2);
    expect(await appliedName(ns, 'a-plain')).toBe('cfg-b');

    // Editing cfg-b fans out to every Gateway it renders: its own class's and the switched one.
    await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg-b', (s) => ({ ...s, horizontalScaling: { replicas: 4, enforceReplicas: true } }));
    const fanned = (await eventTargets(w.r().api, { controllerName: CONTROLLER_NAME, namespaces: [ns] }, event('GatewayConfiguration', 'cfg-b', ns))).map((t) => t.key);
    expect(fanned).toEqual([w.key('a-plain'), w.key('b-plain')]);
    for (const k of fanned) expect((await reconcile(k, w.r().deps)).outcome).toBe('applied');
    expect([await replicasOf(ns, 'a-plain'), await replicasOf(ns, 'b-plain'), await replicasOf(ns, 'a-own')]).toEqual([4, 4, 3]);
  });

  it('a class default in another namespace is named namespace/name', async () => {
    const ns = w.ns();
    const cls = `x-${ns}`;
    // The world's namespace holds the Gateway; the default lives in a second one.
    const other = `${ns}-cfg`;
    await adminConfig().makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: other } } });
    try {
      await createConfiguration(other, 'shared', configurationSpec());
      await createClassWithRef(cls, ref('shared', other));
      await createGateway(ns, 'gw', cls);
      expect((await reconcile(w.key(), w.r().deps)).outcome).toBe('applied');
      expect(await appliedName(ns, 'gw')).toBe(`${other}/shared`);
      expect(condition(await readGateway(ns, 'gw'), 'Programmed')?.message).toContain(`GatewayConfiguration ${other}/shared generation 1`);
    } finally {
      await adminConfig().makeApiClient(CoreV1Api).deleteNamespace({ name: other });
    }
  });

  it('listener status: attachedRoutes follows L34Route attach and detach', async () => {
    await w.setup();
    const ns = w.ns();
    await reconcile(w.key(), w.r().deps);
    // The Deployment controller's first status, reported, so that each step below changes only the routes.
    await deploymentObserved(ns, 'sllbr-gw');
    expect(await reconcile(w.key(), w.r().deps)).toMatchObject({ deploymentWritten: false });
    const attached = async (): Promise<number | undefined> => storedListeners(await readGateway(ns, 'gw')).find((l) => l.name === 'default')?.attachedRoutes;
    const first = storedListeners(await readGateway(ns, 'gw'));
    expect(first).toEqual([
      expect.objectContaining({ name: 'default', supportedKinds: [{ group: 'meridio-2.nordix.org', kind: 'L34Route' }], attachedRoutes: 0 }),
    ]);
    expect(first[0]?.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Accepted', 'True', 'Accepted'],
      ['Programmed', 'True', 'Programmed'],
      ['ResolvedRefs', 'True', 'ResolvedRefs'],
      ['Conflicted', 'False', 'NoConflicts'],
    ]);

    await createRoute(ns, 'r1', 'gw', ['20.0.0.1/32']);
    await createRoute(ns, 'r2', 'gw', ['20.0.0.2/32']);
    expect(await reconcile(w.key(), w.r().deps)).toMatchObject({ statusWritten: true });
    expect(await attached()).toBe(2);

    await deleteObject(L34ROUTES, ns, 'r1');
    expect(await reconcile(w.key(), w.r().deps)).toMatchObject({ statusWritten: true });
    expect(await attached()).toBe(1);
    expect(await reconcile(w.key(), w.r().deps)).toMatchObject({ outcome: 'in-sync', statusWritten: false });
  });
});
