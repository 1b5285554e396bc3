import { readFileSync } from 'node:fs';
import { AppsV1Api, CustomObjectsApi, loadYaml } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { GATEWAYS, GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_UID } from '../../api/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { parseTemplate, type Template } from '../../functions/reconcile/template.js';
import { adminConfig, statusOf } from '../support/cluster.js';
import {
  APPLIED,
  condition,
  configurationSpec,
  createClass,
  createConfiguration,
  createGateway,
  deleteObject,
  deploymentObserved,
  editDeployment,
  editSpec,
  listEvents,
  rawDeployment,
  readDeployment,
  readGateway,
  type Spec,
} from '../support/fixtures.js';
import { TEMPLATE_FILE, type Reconciler } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

function templateWithNetworks(value: string): Template {
  const raw = loadYaml<{ spec: { template: { metadata: { annotations?: Record<string, string> } } } }>(readFileSync(TEMPLATE_FILE, 'utf8'));
  raw.spec.template.metadata.annotations = { ...raw.spec.template.metadata.annotations, 'k8s.v1.cni.cncf.io/networks': value };
  return parseTemplate(JSON.stringify(raw), 'template with networks');
}

describe('reconcile rules', () => {
  const w = useWorld('rr');
  const ns = w.ns;
  let r: Reconciler;
  beforeEach(() => {
    r = w.r();
  });
  const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);
  const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

  describe('validation: Accepted=False/InvalidParameters naming the offending value, and no Deployment', () => {
    // Every row has all four columns: jest passes a `done` callback to a test
    // function that declares more parameters than its row has.
    const cases: Array<[string, Spec | null, string, { ref?: Spec; templateNetworks?: string }]> = [
      ['missing parametersRef', null, 'parametersRef is missing', {}],
      ['a wrong group', null, 'example.com', { ref: { group: 'example.com', kind: 'GatewayConfiguration', name: 'cfg' } }],
      ['a wrong kind', null, 'ConfigMap', { ref: { group: 'meridio-2.nordix.org', kind: 'ConfigMap', name: 'cfg' } }],
      ['a GatewayConfiguration that does not exist', null, 'absent', { ref: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'absent' } }],
      ['a default route', configurationSpec({ internalSubnets: [{ attachmentType: 'NAD', cidr: '0.0.0.0/0' }] }), '0.0.0.0/0', {}],
      ['an IPv6 default route', configurationSpec({ internalSubnets: [{ attachmentType: 'NAD', cidr: '::/0' }] }), '::/0', {}],
      ['IPv6 link-local', configurationSpec({ internalSubnets: [{ attachmentType: 'NAD', cidr: 'fe80::/64' }] }), 'fe80::/64', {}],
      ['a NAD without a name', configurationSpec({ networkAttachments: [{ type: 'NAD', nad: { name: '', interface: 'net1' } }] }), 'nad.name', {}],
      ['a NAD without an interface', configurationSpec({ networkAttachments: [{ type: 'NAD', nad: { name: 'lan', interface: '' } }] }), 'lan', {}],
      ['a duplicate interface', configurationSpec({ networkAttachments: [{ type: 'NAD', nad: { name: 'a', interface: 'net1' } }, { type: 'NAD', nad: { name: 'b', interface: 'net1' } }] }), 'net1', {}],
      // The shipped template names no network; this row gives it one.
      ['an interface that clashes with the template', configurationSpec({ networkAttachments: [{ type: 'NAD', nad: { name: 'other', interface: 'dummy' } }] }), 'dummy', { templateNetworks: '[{"name":"sysctl-tuning","interface":"dummy"}]' }],
      ['resource claims', configurationSpec({ verticalScaling: { containers: [{ name: 'router', resources: { claims: [{ name: 'gpu' }] } }] } }), 'gpu', {}],
    ];

    it.each(cases)('%s', async (_what, spec, offending, opts) => {
      if (spec) await createConfiguration(ns(), 'cfg', spec);
      const body = {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: 'gw' },
        spec: {
          gatewayClassName: w.cls(),
          listeners: [{ name: 'default', protocol: 'TCP', port: 80 }],
          ...(opts?.ref ? { infrastructure: { parametersRef: opts.ref } } : spec ? { infrastructure: { parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'cfg' } } } : {}),
        },
      };
      await custom().createNamespacedCustomObject({ ...GATEWAYS, namespace: ns(), body });
      const res = await reconcile(w.key(), opts.templateNetworks ? { ...r.deps, template: templateWithNetworks(opts.templateNetworks) } : r.deps);
      expect(res).toMatchObject({ outcome: 'invalid', deploymentWritten: false, next: 'settle' });
      const gw = await readGateway(ns(), 'gw');
      expect(condition(gw, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidParameters' });
      expect(condition(gw, 'Accepted')?.message).toContain(offending);
      expect(await statusOf(apps().readNamespacedDeployment({ namespace: ns(), name: 'sllbr-gw' }))).toBe(404);
    });

    it('recovers once the configuration is fixed', async () => {
      await createConfiguration(ns(), 'cfg', configurationSpec({ internalSubnets: [{ attachmentType: 'NAD', cidr: '0.0.0.0/0' }] }));
      await createGateway(ns(), 'gw', w.cls(), 'cfg');
      expect((await reconcile(w.key(), r.deps)).outcome).toBe('invalid');
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, internalSubnets: [{ attachmentType: 'NAD', cidr: '10.10.0.0/16' }] }));
      expect((await reconcile(w.key(), r.deps)).outcome).toBe('applied');
      const gw = await readGateway(ns(), 'gw');
      expect(condition(gw, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
      expect(condition(gw, APPLIED)).toMatchObject({ status: 'True' });
      expect((await rawDeployment(ns(), 'sllbr-gw')).metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION]).toBe('2');
    });
  });

  it('name collision: Programmed=False/Invalid naming the real owner; the foreign Deployment is untouched', async () => {
    await apps().createNamespacedDeployment({
      namespace: ns(),
      body: {
        metadata: { name: 'sllbr-gw', labels: { owner: 'someone-else' } },
        spec: { replicas: 1, selector: { matchLabels: { x: 'y' } }, template: { metadata: { labels: { x: 'y' } }, spec: { containers: [{ name: 'c', image: 'example.invalid/c:1' }] } } },
      },
    });
    await waitFor('the foreign Deployment to settle', async () => ((await readDeployment(ns(), 'sllbr-gw')).status?.observedGeneration === 1 ? true : undefined));
    // The deployment controller keeps updating the status of a Deployment whose
    // Pods never run: compare what a writer of the object itself would change.
    const ownParts = async (): Promise<string> => {
      const d = (await rawDeployment(ns(), 'sllbr-gw')) as unknown as { metadata: Record<string, unknown>; spec: unknown };
      return JSON.stringify({ generation: d.metadata.generation, labels: d.metadata.labels, annotations: d.metadata.annotations, ownerReferences: d.metadata.ownerReferences, spec: d.spec });
    };
    const before = await ownParts();
    await w.setup();
    const res = await reconcile(w.key(), r.deps);
    expect(res).toMatchObject({ outcome: 'collision', deploymentWritten: false, next: 'settle' });
    const gw = await readGateway(ns(), 'gw');
    expect(condition(gw, 'Programmed')).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(condition(gw, 'Programmed')?.message).toContain('no controller');
    expect(await ownParts()).toBe(before);
    expect((await listEvents(ns())).filter((e) => e.reason === 'NameCollision').length).toBe(1);
    // Again: nothing new.
    const again = await reconcile(w.key(), r.deps);
    expect(again).toMatchObject({ statusWritten: false, eventsWritten: 0 });
  });

  it('ownership transfer: a class that stops being ours resets Accepted to Unknown/Pending', async () => {
    await w.setup();
    await reconcile(w.key(), r.deps);
    // controllerName is immutable on a class: move the Gateway to another class instead.
    const other = `other-${ns()}`;
    await createClass(other, 'example.com/another-controller');
    await editSpec(GATEWAYS, ns(), 'gw', (s) => ({ ...s, gatewayClassName: other }));
    const res = await reconcile(w.key(), r.deps);
    expect(res.outcome).toBe('not-ours');
    const gw = await readGateway(ns(), 'gw');
    expect(condition(gw, 'Accepted')).toMatchObject({ status: 'Unknown', reason: 'Pending', message: 'Waiting for controller' });
    // Touch nothing else: a second pass writes nothing.
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ statusWritten: false, deploymentWritten: false });
  });

  async function scaleTo5(): Promise<void> {
    const scaled = await editDeployment(ns(), 'sllbr-gw', (d) => {
      d.spec!.replicas = 5;
      return d;
    });
    expect(scaled.spec?.replicas).toBe(5);
  }

  it.each([[false, 5], [true, 2]])('enforceReplicas=%s: an external scale to 5 ends at %i', async (enforce, expected) => {
    await w.setup({ spec: configurationSpec({ horizontalScaling: { replicas: 2, enforceReplicas: enforce } }) });
    await reconcile(w.key(), r.deps);
    await scaleTo5();
    await reconcile(w.key(), r.deps);
    expect((await readDeployment(ns(), 'sllbr-gw')).spec?.replicas).toBe(expected);
  });

  it.each([[false, '111m'], [true, '250m']])('enforceResources=%s: an external CPU change ends at %s; unlisted containers keep theirs', async (enforce, expected) => {
    await w.setup({
      spec: configurationSpec({ verticalScaling: { containers: [{ name: 'router', enforceResources: enforce, resources: { requests: { cpu: '250m' } } }] } }),
    });
    await reconcile(w.key(), r.deps);
    const created = await readDeployment(ns(), 'sllbr-gw');
    expect(created.spec?.template.spec?.containers.find((c) => c.name === 'router')?.resources?.requests?.cpu).toBe('250m');
    const changed = await editDeployment(ns(), 'sllbr-gw', (d) => {
      for (const c of d.spec!.template.spec!.containers) c.resources = { ...c.resources, requests: { ...c.resources?.requests, cpu: '111m' } };
      return d;
    });
    expect(changed.spec?.template.spec?.containers.map((c) => c.resources?.requests?.cpu)).toEqual(changed.spec?.template.spec?.containers.map(() => '111m'));
    await reconcile(w.key(), r.deps);
    const after = await readDeployment(ns(), 'sllbr-gw');
    const cpu = (name: string): string | undefined => after.spec?.template.spec?.containers.find((c) => c.name === name)?.resources?.requests?.cpu;
    expect(cpu('router')).toBe(expected);
    expect(cpu('loadbalancer')).toBe('111m');
  });

  it('a GatewayConfiguration deleted and re-created under the same name is told apart by uid and applied', async () => {
    await w.setup();
    await reconcile(w.key(), r.deps);
    const first = (await rawDeployment(ns(), 'sllbr-gw')).metadata.annotations!;
    await deleteObject(GATEWAY_CONFIGURATIONS, ns(), 'cfg');
    const recreated = await createConfiguration(ns(), 'cfg', configurationSpec({ horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    expect(recreated.metadata.generation).toBe(1);
    const res = await reconcile(w.key(), r.deps);
    expect(res).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    const second = (await rawDeployment(ns(), 'sllbr-gw')).metadata.annotations!;
    expect(second[APPLIED_CONFIGURATION_GENERATION]).toBe('1');
    expect(second[APPLIED_CONFIGURATION_UID]).toBe(recreated.metadata.uid);
    expect(second[APPLIED_CONFIGURATION_UID]).not.toBe(first[APPLIED_CONFIGURATION_UID]);
    expect((await readDeployment(ns(), 'sllbr-gw')).spec?.replicas).toBe(3);
    expect(condition(await readGateway(ns(), 'gw'), APPLIED)).toMatchObject({ status: 'True' });
  });

  it('deleting the Gateway garbage-collects its Deployment', async () => {
    await w.setup();
    await reconcile(w.key(), r.deps);
    await deleteObject(GATEWAYS, ns(), 'gw');
    await waitFor('the LB Deployment to be collected', async () => ((await statusOf(apps().readNamespacedDeployment({ namespace: ns(), name: 'sllbr-gw' }))) === 404 ? true : undefined), { timeoutMs: 60000 });
    // A reconcile of the deleted Gateway does nothing.
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ outcome: 'not-found', deploymentWritten: false, statusWritten: false });
  });

  it('20 concurrent reconciles of one Gateway give one Deployment, a consistent status and no permanent failure', async () => {
    await w.setup();
    const results = await Promise.all(Array.from({ length: 20 }, () => reconcile(w.key(), r.deps)));
    for (const res of results) {
      expect(res.outcome).not.toBe('error');
      expect(res.error?.class).not.toBe('persistent');
    }
    const list = await apps().listNamespacedDeployment({ namespace: ns() });
    expect(list.items.map((d) => d.metadata?.name)).toEqual(['sllbr-gw']);
    const gw = await readGateway(ns(), 'gw');
    expect(condition(gw, 'Accepted')?.status).toBe('True');
    expect(condition(gw, 'Programmed')?.status).toBe('True');
    expect(condition(gw, APPLIED)?.status).toBe('True');
    // And it is a fixed point. The Deployment controller's first status is
    // a change from outside (LBAvailable leaves Pending): once it is there, one
    // reconcile reports it, writing no Deployment, and the next writes nothing.
    await deploymentObserved(ns(), 'sllbr-gw');
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ outcome: 'in-sync', deploymentWritten: false });
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ outcome: 'in-sync', deploymentWritten: false, statusWritten: false });
  });
});
