import { deepEqual, needsWrite, overlayManaged, semanticSubset } from '../../functions/reconcile/plan/deployment-diff.js';
import { renderDeployment } from '../../functions/reconcile/plan/render-deployment.js';
import { DeploymentSchema, type Deployment, type GatewayConfiguration } from '../../api/schemas.js';
import {
  CONTROLLER,
  LB_SERVICE_ACCOUNT,
  TEMPLATE_HASH,
  gateway,
  gatewayConfiguration,
  simulateServer,
  templateDeployment,
} from './reconcile-fixtures.js';

function render(configuration: GatewayConfiguration, live: Deployment | null, template = templateDeployment()): Deployment {
  const result = renderDeployment({
    template,
    templateHash: TEMPLATE_HASH,
    gateway: gateway(),
    configuration,
    settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT },
    live,
  });
  if (!result.ok) throw new Error(result.error);
  return result.deployment;
}

function edit(d: Deployment, mutate: (d: Deployment) => void): Deployment {
  const copy = structuredClone(d);
  mutate(copy);
  return DeploymentSchema.parse(copy);
}

const router = (d: Deployment) => d.spec.template.spec.containers.find((c) => c.name === 'router')!;

describe('semanticSubset', () => {
  it('accepts extra (defaulted) keys on the live side', () => {
    expect(semanticSubset({ a: 1 }, { a: 1, b: 2 })).toBe(true);
    expect(semanticSubset({ a: 1, b: 2 }, { a: 1 })).toBe(false);
  });

  it('treats zero values and absence alike', () => {
    expect(semanticSubset({ value: '', list: [], map: {}, flag: false }, {})).toBe(true);
    expect(semanticSubset({ value: 'x' }, {})).toBe(false);
  });

  it('requires lists to match element by element', () => {
    expect(semanticSubset([{ a: 1 }], [{ a: 1, b: 2 }])).toBe(true);
    expect(semanticSubset([{ a: 1 }], [{ a: 1 }, { a: 2 }])).toBe(false);
    expect(semanticSubset([{ a: 1 }, { a: 2 }], [{ a: 2 }, { a: 1 }])).toBe(false);
  });

  it('compares requests and limits exactly, by value', () => {
    expect(semanticSubset({ resources: { requests: { cpu: '1000m' } } }, { resources: { requests: { cpu: '1' } } })).toBe(true);
    expect(semanticSubset({ resources: { limits: { memory: '1Gi' } } }, { resources: { limits: { memory: '1G' } } })).toBe(false);
    expect(
      semanticSubset({ resources: { requests: { cpu: '1' } } }, { resources: { requests: { cpu: '1', memory: '1Gi' } } }),
    ).toBe(false);
    expect(semanticSubset({ resources: {} }, { resources: { limits: { cpu: '1' } } })).toBe(false);
  });
});

describe('deepEqual', () => {
  it('ignores keys holding undefined and key order', () => {
    expect(deepEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(deepEqual({ a: 1, c: [1, { d: 2 }] }, { c: [1, { d: 2 }], a: 1 })).toBe(true);
    expect(deepEqual({ a: [1] }, { a: [1, 2] })).toBe(false);
    expect(deepEqual({ a: {} }, { a: [] })).toBe(false);
  });
});

describe('overlayManaged', () => {
  const configuration = gatewayConfiguration({
    verticalScaling: { containers: [{ name: 'router', enforceResources: true, resources: { requests: { cpu: '1000m' } } }] },
  });
  const created = render(configuration, null);
  const live = simulateServer(created, null, '5');

  it('writes nothing when the only differences are server defaults and canonical quantities', () => {
    expect(router(live).resources).toEqual({ requests: { cpu: '1' } });
    const desired = render(configuration, live);
    const body = overlayManaged(live, desired, { force: false });
    expect(needsWrite(live, body)).toBe(false);
    expect(body).toEqual(live);
  });

  it('keeps resourceVersion, status and unmanaged fields in the body', () => {
    const withExtras = edit(live, (d) => {
      d.status = { observedGeneration: 1, replicas: 2, availableReplicas: 2 };
      d.spec.template.spec.nodeSelector = { disk: 'ssd' };
      d.spec.replicas = 5;
    });
    const body = overlayManaged(withExtras, render(configuration, withExtras), { force: false });
    expect(body.metadata.resourceVersion).toBe('5');
    expect(body.status).toEqual(withExtras.status);
    expect(body.spec.template.spec.nodeSelector).toEqual({ disk: 'ssd' });
    expect(body.spec.replicas).toBe(2);
  });

  it('preserves labels and annotations others added, on the Deployment and the pod template', () => {
    const touched = edit(live, (d) => {
      d.metadata.labels = { ...d.metadata.labels, 'example.com/owner': 'ops' };
      d.metadata.annotations = { ...d.metadata.annotations, 'deployment.kubernetes.io/revision': '3' };
      d.spec.template.metadata!.annotations = {
        ...d.spec.template.metadata!.annotations,
        'kubectl.kubernetes.io/restartedAt': '2025-01-01T00:00:00Z',
      };
    });
    const body = overlayManaged(touched, render(configuration, touched), { force: true });
    expect(body.metadata.labels?.['example.com/owner']).toBe('ops');
    expect(body.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('3');
    expect(body.spec.template.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt']).toBe('2025-01-01T00:00:00Z');
    expect(needsWrite(touched, overlayManaged(touched, render(configuration, touched), { force: false }))).toBe(false);
  });

  it('repairs drift in a managed field', () => {
    const drifted = edit(live, (d) => {
      router(d).env = router(d).env?.filter((e) => e.name !== 'POD_UID');
      d.spec.template.spec.serviceAccountName = 'someone-else';
      d.spec.template.spec.serviceAccount = 'someone-else';
    });
    const body = overlayManaged(drifted, render(configuration, drifted), { force: false });
    expect(needsWrite(drifted, body)).toBe(true);
    expect(router(body).env?.map((e) => e.name)).toContain('POD_UID');
    expect(body.spec.template.spec.serviceAccountName).toBe(LB_SERVICE_ACCOUNT);
    expect(body.spec.template.spec.serviceAccount).toBe(LB_SERVICE_ACCOUNT);
  });

  it('notices a request someone added to an enforced container, but not to an unenforced one', () => {
    const addedToRouter = edit(live, (d) => {
      router(d).resources = { requests: { cpu: '1', memory: '1Gi' } };
    });
    expect(needsWrite(addedToRouter, overlayManaged(addedToRouter, render(configuration, addedToRouter), { force: false }))).toBe(true);
    const addedToNfqlb = edit(live, (d) => {
      d.spec.template.spec.containers[2]!.resources = { requests: { cpu: '3' } };
    });
    expect(needsWrite(addedToNfqlb, overlayManaged(addedToNfqlb, render(configuration, addedToNfqlb), { force: false }))).toBe(false);
  });

  it('with force, writes the managed fields exactly as rendered (a removed template field goes away)', () => {
    const template = templateDeployment((raw) => {
      const containers = (raw.spec as { template: { spec: { containers: Array<Record<string, unknown>> } } }).template.spec
        .containers;
      containers[1]!.args = ['run'];
    });
    const old = simulateServer(render(configuration, null, template), null, '7');
    const desired = render(configuration, old);
    expect(needsWrite(old, overlayManaged(old, desired, { force: false }))).toBe(false);
    const forced = overlayManaged(old, desired, { force: true });
    expect(router(forced)).not.toHaveProperty('args');
    expect(router(forced)).not.toHaveProperty('terminationMessagePath');
    expect(forced.spec.template.spec.dnsPolicy).toBe('ClusterFirst');
  });

  it('does not mutate its inputs', () => {
    const desired = render(configuration, live);
    const before = [structuredClone(live), structuredClone(desired)];
    overlayManaged(live, desired, { force: true });
    expect([live, desired]).toEqual(before);
  });
});
