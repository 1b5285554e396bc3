import { planVerdict, type Verdict } from '../../cli/kubectl-meridio/plan-verdict.js';
import { renderPlan } from '../../cli/kubectl-meridio/plan.js';
import { serviceRuns } from '../../cli/kubectl-meridio/controller-install.js';
import { DeploymentSchema, type Deployment } from '../../api/schemas.js';
import type { RolloutCensus } from '../../functions/reconcile/plan/plan-types.js';
import { ROLLING, rolloutIndexKey } from '../../functions/reconcile/plan/rollout-index.js';
import { CONTROLLER, GW, NS, gateway, gatewayClass, gatewayConfiguration, invoke, observed, type Scenario } from './reconcile-fixtures.js';

// The pure part of `kubectl meridio plan`: each verdict from the planner's
// own answer on objects its plans produced.

function verdictOf(s: Scenario): Verdict {
  const { template, settings, retriesExhausted: _r, now, ...o } = s;
  const v = planVerdict(o, { template, settings }, now);
  if ('needsCensus' in v) throw new Error('the planner asked for the census');
  return v;
}

/** Created and its status stored: in sync. */
function inSync(): Scenario {
  return invoke(invoke(observed()).next).next;
}

function withImage(s: Scenario, image: string, hash: string): Scenario {
  const next = structuredClone(s.template.deployment);
  const lb = next.spec.template.spec.containers[0];
  if (lb) lb.image = image;
  return { ...s, template: { deployment: next, hash } };
}

describe('plan: the verdicts', () => {
  it('nothing: the Deployment is as rendered', () => {
    expect(verdictOf(inSync())).toMatchObject({ gateway: `${NS}/${GW}`, verdict: 'nothing', rolls: false, fields: [] });
  });

  it('create: no LB Deployment yet', () => {
    expect(verdictOf(observed())).toMatchObject({ verdict: 'create', rolls: false });
  });

  it('metadata only: a new Gateway generation that renders the same pod template', () => {
    const s = inSync();
    const v = verdictOf({ ...s, gateway: gateway({ generation: 2, status: s.gateway?.status as Record<string, unknown> }) });
    expect(v).toMatchObject({ verdict: 'metadata-only', rolls: false });
    expect(v.fields).toEqual(['metadata.annotations.meridio-2.nordix.org/applied-gateway-generation']);
  });

  it('pod-template change because of the template: which fields', () => {
    const v = verdictOf(withImage(inSync(), 'registry.example/lb:next', 'hash-2'));
    expect(v).toMatchObject({ verdict: 'pod-template-change', rolls: true, causes: ['template'] });
    expect(v.fields).toEqual([expect.stringMatching(/^spec\.template\.spec\.containers\[[a-z-]+\]\.image$/)]);
    expect(v.message).toMatch(/^the LB Pods roll: spec\.template\.spec\.containers\[.+\]\.image; because the LB template changed/);
  });

  it('pod-template change because of the configuration', () => {
    const s = inSync();
    const v = verdictOf({ ...s, gatewayConfiguration: gatewayConfiguration({ horizontalScaling: { replicas: 2, enforceReplicas: true }, networkAttachments: [{ type: 'NAD', nad: { name: 'other', namespace: NS, interface: 'int0' } }] }, { generation: 2 }) });
    expect(v).toMatchObject({ verdict: 'pod-template-change', rolls: true, causes: ['configuration'] });
  });

  it('pod-template change from the same inputs: a new default, or a hand edit put back', () => {
    const s = inSync();
    const edited = structuredClone(s.deployment) as Deployment;
    const c = edited.spec.template.spec.containers[0];
    if (c) c.image = 'hand/edited:1';
    const v = verdictOf({ ...s, deployment: DeploymentSchema.parse(edited) });
    expect(v).toMatchObject({ verdict: 'pod-template-change', rolls: true, causes: ['new-default'] });
  });

  it('queued by the budget: it would roll once a slot frees', () => {
    const s = withImage(inSync(), 'registry.example/lb:next', 'hash-2');
    const holder = DeploymentSchema.parse({ ...structuredClone(s.deployment), metadata: { ...structuredClone(s.deployment?.metadata), name: 'sllbr-a', labels: { ...s.deployment?.metadata.labels, [rolloutIndexKey(CONTROLLER)]: ROLLING }, ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'a', uid: 'uid-a', controller: true }] }, status: { observedGeneration: 1, replicas: 1, updatedReplicas: 0 } });
    const rollouts: RolloutCensus = { deployments: [holder, s.deployment as Deployment] };
    const budgeted = { ...s, settings: { ...s.settings, rolloutBudget: 1 } };
    const { template, settings, retriesExhausted: _r, now, ...o } = budgeted;
    expect(planVerdict(o, { template, settings }, now)).toEqual({ needsCensus: true });
    const v = verdictOf({ ...budgeted, rollouts });
    expect(v).toMatchObject({ verdict: 'queued', rolls: true, causes: ['template'] });
    expect(v.fields.length).toBe(1);
    expect(v.message).toContain(`slots held by ${NS}/sllbr-a (rolling), 0 Gateways before it`);
  });

  it('invalid: why, and nothing is written', () => {
    const v = verdictOf({ ...inSync(), gatewayConfiguration: null });
    expect(v).toMatchObject({ verdict: 'invalid', rolls: false });
    expect(v.message).toMatch(/^not accepted: .+; nothing is written to the Deployment$/);
  });

  it('not ours, and a name collision', () => {
    expect(verdictOf({ ...inSync(), gatewayClass: gatewayClass('example.com/other') })).toMatchObject({ verdict: 'not-ours', rolls: false });
    const s = inSync();
    const foreign = DeploymentSchema.parse({ ...structuredClone(s.deployment), metadata: { ...structuredClone(s.deployment?.metadata), ownerReferences: [] } });
    expect(verdictOf({ ...s, deployment: foreign })).toMatchObject({ verdict: 'collision', rolls: false });
  });

  it('renders one row per Gateway and the count that roll', () => {
    const v = verdictOf(withImage(inSync(), 'registry.example/lb:next', 'hash-2'));
    const text = renderPlan({ template: { source: 'ConfigMap x/y key z', hash: 'abcdef0123456789' }, settings: { controllerName: 'c', rolloutBudget: 0, lbPodDisruptionBudget: null }, gateways: [v], rolling: 1 }, false);
    expect(text.split('\n')).toEqual([
      'LB template: ConfigMap x/y key z (hash abcdef012345); LB_ROLLOUT_BUDGET=0',
      expect.stringMatching(/^GATEWAY\s+VERDICT\s+ROLLS\s+WHY$/),
      expect.stringMatching(new RegExp(`^${NS}/${GW}\\s+pod-template change\\s+yes\\s+the LB Pods roll: `)),
      '1 of 1 Gateway would roll their LB Pods.',
      '',
    ]);
  });
});

describe('plan: the controller the cluster runs', () => {
  const service = (env: { name: string; value?: string }[], mounts: { name: string; mountPath: string }[], volumes: { name: string; configMap?: { name: string } }[]) => ({ spec: { template: { spec: { containers: [{ env, volumeMounts: mounts }], volumes } } } });

  it('finds the template ConfigMap and key the Service mounts at TEMPLATE_PATH', () => {
    const runs = serviceRuns(service([{ name: 'TEMPLATE_PATH', value: '/etc/meridio-2/templates/lb-deployment.yaml' }, { name: 'LB_ROLLOUT_BUDGET', value: '2' }, { name: 'FROM_SECRET' }], [{ name: 'lb-template', mountPath: '/etc/meridio-2/templates' }], [{ name: 'lb-template', configMap: { name: 'meridio-2-lb-template-abc' } }]));
    expect(runs).toEqual({ env: { TEMPLATE_PATH: '/etc/meridio-2/templates/lb-deployment.yaml', LB_ROLLOUT_BUDGET: '2' }, template: { configMap: 'meridio-2-lb-template-abc', key: 'lb-deployment.yaml' } });
  });

  it('says why when the template is not on a ConfigMap', () => {
    expect(serviceRuns(service([], [], [])).template).toEqual({ problem: 'TEMPLATE_PATH infra/templates/lb-deployment.yaml is not on a mounted volume: the template is the image\'s own' });
    expect(serviceRuns(service([{ name: 'TEMPLATE_PATH', value: '/t/x.yaml' }], [{ name: 'v', mountPath: '/t' }], [{ name: 'v' }])).template).toEqual({ problem: 'TEMPLATE_PATH /t/x.yaml is on volume v, which is not a ConfigMap' });
  });
});

