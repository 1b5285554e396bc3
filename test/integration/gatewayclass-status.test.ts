import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { GATEWAY_CLASSES } from '../../functions/kube/kube-api.js';
import { reconcileClass, type ClassReconcileDeps } from '../../functions/gatewayclass/reconcile.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { GatewayClassSchema, type GatewayClass } from '../../api/schemas.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { configurationSpec, createClass, createConfiguration } from '../support/fixtures.js';
import { CONTROLLER_NAME } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

// The GatewayClass reconcile on the real API server, as the controller's
// ServiceAccount under the shipped ClusterRole: status written once per
// change through the status subresource, and not at all when unchanged.

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

async function readClass(name: string): Promise<GatewayClass> {
  return GatewayClassSchema.parse(await custom().getClusterCustomObject({ ...GATEWAY_CLASSES, name }));
}

async function setParametersRef(name: string, parametersRef: Record<string, unknown>): Promise<void> {
  const live = (await custom().getClusterCustomObject({ ...GATEWAY_CLASSES, name })) as { spec: Record<string, unknown> };
  await custom().replaceClusterCustomObject({ ...GATEWAY_CLASSES, name, body: { ...live, spec: { ...live.spec, parametersRef } } });
}

const cond = (gc: GatewayClass, type: string): unknown => gc.status?.conditions?.find((c) => c.type === type);

describe('GatewayClass status', () => {
  const w = useWorld('gwc');
  const deps = (): ClassReconcileDeps => ({
    api: w.r().api,
    controllerName: w.r().deps.settings.controllerName,
    template: w.r().deps.template.deployment,
    clock: () => new Date(),
  });

  it('accepts a class of ours: Accepted, SupportedVersion for the installed v1.6 CRDs, sorted supportedFeatures', async () => {
    const res = await reconcileClass(w.cls(), deps());
    expect(res).toMatchObject({ outcome: 'accepted', statusWritten: true, next: 'settle' });
    const gc = await readClass(w.cls());
    expect(cond(gc, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1, message: `GatewayClass accepted by ${CONTROLLER_NAME}` });
    expect(cond(gc, 'SupportedVersion')).toMatchObject({ status: 'True', reason: 'SupportedVersion', observedGeneration: 1 });
    expect(gc.status?.supportedFeatures).toEqual([{ name: 'Gateway' }, { name: 'GatewayInfrastructure' }]);
  });

  it('no-op: reconciling an unchanged class makes zero writes', async () => {
    await reconcileClass(w.cls(), deps());
    const before = JSON.stringify((await readClass(w.cls())).status);

    const window = await auditLog().begin();
    const res = await reconcileClass(w.cls(), deps());
    const events = await window.end();

    expect(res).toMatchObject({ outcome: 'accepted', statusWritten: false });
    expect(countBy(events, { user: w.r().username, verb: WRITE_VERBS })).toEqual({});
    expect(countBy(events, { user: w.r().username })).toEqual({
      [`${w.r().username} get gatewayclasses`]: 1,
      [`${w.r().username} get customresourcedefinitions`]: 1,
    });
    expect(JSON.stringify((await readClass(w.cls())).status)).toBe(before);
  });

  it('refuses a parametersRef to a missing GatewayConfiguration, and accepts once it exists (configuration event)', async () => {
    await reconcileClass(w.cls(), deps());
    await setParametersRef(w.cls(), { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'shared', namespace: w.ns() });
    expect(await reconcileClass(w.cls(), deps())).toMatchObject({ outcome: 'invalid', statusWritten: true });
    const refused = await readClass(w.cls());
    expect(cond(refused, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters', observedGeneration: 2, message: `GatewayConfiguration "${w.ns()}/shared" not found` });
    expect(cond(refused, 'SupportedVersion')).toMatchObject({ observedGeneration: 2 });

    await createConfiguration(w.ns(), 'shared', configurationSpec());
    const r = w.r();
    const handled = await invoke(
      { kind: 'apiserver', mode: 'ref', action: 'add', resource: { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'GatewayConfiguration', name: 'shared', namespace: w.ns() }, object: undefined },
      handlerDeps(r.deps, { namespaces: [w.ns()] }),
      { type: 'test', id: 'cfg-add' },
    );
    expect(handled).toMatchObject({ next: 'settle', classes: `${w.cls()}:accepted` });
    expect(cond(await readClass(w.cls()), 'Accepted')).toMatchObject({ status: 'True', message: expect.stringContaining(`GatewayConfiguration ${w.ns()}/shared`) });
  });

  it('refuses a parametersRef of a foreign kind', async () => {
    await setParametersRef(w.cls(), { group: 'example.com', kind: 'Params', name: 'x', namespace: w.ns() });
    expect(await reconcileClass(w.cls(), deps())).toMatchObject({ outcome: 'invalid' });
    expect(cond(await readClass(w.cls()), 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters', message: expect.stringContaining('example.com') });
  });

  it('leaves a class of another controller alone', async () => {
    const name = `other-${w.ns()}`;
    await createClass(name, 'example.com/other-controller');
    const window = await auditLog().begin();
    expect(await reconcileClass(name, deps())).toMatchObject({ outcome: 'not-ours', statusWritten: false });
    const events = await window.end();
    expect(countBy(events, { user: w.r().username, verb: WRITE_VERBS })).toEqual({});
    expect((await readClass(name)).status?.conditions?.find((c) => c.type === 'Accepted')?.status).not.toBe('True');
  });
});
