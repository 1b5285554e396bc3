import { answer, failurePhrase, type ExplainFacts } from '../../cli/kubectl-meridio/explain-answer.js';
import { evidence, renderExplain } from '../../cli/kubectl-meridio/explain-evidence.js';
import { age } from '../../cli/kubectl-meridio/age.js';
import { rolloutStatus } from '../../cli/kubectl-meridio/rollout-status.js';
import { deadLettered, warningsAbout, WarningEventSchema } from '../../cli/kubectl-meridio/warning-events.js';
import { DeploymentSchema, PodDisruptionBudgetSchema, type Deployment } from '../../api/schemas.js';
import type { RolloutCensus } from '../../functions/reconcile/plan/plan-types.js';
import { ROLLING, rolloutIndexKey } from '../../functions/reconcile/plan/rollout-index.js';
import { CONTROLLER, GC, GW, NOW, NS, TEMPLATE_HASH, gatewayClass, gatewayConfiguration, invoke, observed, route, type Scenario } from './reconcile-fixtures.js';

// The pure part of `kubectl meridio explain`: the sentence for each state,
// from objects the planner's own plans produced (invoke: plan, write, store
// status), and its evidence.

const minutes = (n: number): Date => new Date(Date.parse(NOW) + n * 60_000);

/** A Deployment status as the Deployment controller writes it. */
function withRollout(d: Deployment | null, status: Record<string, unknown> | null): Deployment {
  if (d === null) throw new Error('no Deployment');
  const n = d.spec.replicas ?? 1;
  const done = { replicas: n, updatedReplicas: n, availableReplicas: n, readyReplicas: n, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }] };
  return DeploymentSchema.parse({ ...structuredClone(d), status: { observedGeneration: d.metadata.generation, ...(status ?? done) } });
}

function facts(s: Scenario, more: Partial<ExplainFacts> = {}): ExplainFacts {
  const { template: _t, settings: _s, retriesExhausted: _r, now: _n, ...o } = s;
  if (o.gateway === null) throw new Error('no Gateway');
  return { observed: { ...o, gateway: o.gateway }, controllerName: CONTROLLER, templateHash: TEMPLATE_HASH, rolloutBudget: 0, census: undefined, events: [], now: minutes(14), ...more };
}

/** Created, and its status stored: applied at generation 1. */
function applied(): Scenario {
  const first = invoke(observed()).next;
  const second = invoke(first).next;
  return { ...second, deployment: withRollout(second.deployment, null) };
}

const VAP_ERROR = `deployments.apps "sllbr-${GW}" is forbidden: ValidatingAdmissionPolicy 'deny-lb' with binding 'deny-lb' denied request: frozen`;

describe('explain: the one sentence', () => {
  it('applied and rolled out', () => {
    expect(answer(facts(applied()))).toMatchObject({ state: 'applied', sentence: `GatewayConfiguration ${GC} generation 1 is applied: Deployment ${NS}/sllbr-${GW} runs it, 2/2 LB replicas available` });
  });

  it('apply failed under a denying admission policy: who denied, since when, and what still runs', () => {
    const s = applied();
    const edited = { ...s, gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }) };
    const failed = invoke(edited, { class: 'persistent', code: 422, message: VAP_ERROR }).next;
    expect(answer(facts(failed))).toMatchObject({
      state: 'apply-failed',
      sentence: `GatewayConfiguration ${GC} generation 2 is not applied for 14m: the Deployment write is denied by ValidatingAdmissionPolicy deny-lb (HTTP 422); the LB Pods keep running generation 1`,
    });
  });

  it('retries exhausted: the dead-lettered deliveries counted from the Warnings', () => {
    const s = applied();
    const edited = { ...s, gatewayConfiguration: gatewayConfiguration({}, { generation: 6 }), retriesExhausted: { message: 'dead-lettered after 3 deliveries' } };
    const failed = invoke(edited, { class: 'persistent', code: 422, message: VAP_ERROR }).next;
    const events = [
      WarningEventSchema.parse({ metadata: { name: 'a' }, type: 'Warning', reason: 'RetriesExhausted', note: 'x', regarding: { kind: 'Gateway', name: GW }, series: { count: 3, lastObservedTime: NOW } }),
      WarningEventSchema.parse({ metadata: { name: 'b' }, type: 'Warning', reason: 'RetriesExhausted', note: 'x', regarding: { kind: 'Gateway', name: 'other' } }),
    ];
    expect(answer(facts(failed, { events }))).toMatchObject({
      state: 'retries-exhausted',
      sentence: `GatewayConfiguration ${GC} generation 6 is not applied for 14m: the Deployment write is denied by ValidatingAdmissionPolicy deny-lb (HTTP 422), 3 deliveries dead-lettered; the LB Pods keep running generation 1`,
    });
  });

  it('queued behind a rollout: its place in line and who holds the slot', () => {
    const s = applied();
    const next = structuredClone(s.template.deployment);
    const lb = next.spec.template.spec.containers[0];
    if (lb) lb.image = 'registry.example/lb:next';
    const budgeted = { ...s, settings: { ...s.settings, rolloutBudget: 1 }, template: { deployment: next, hash: 'template-hash-2' } };
    const holder = DeploymentSchema.parse({ ...structuredClone(s.deployment), metadata: { ...structuredClone(s.deployment?.metadata), name: 'sllbr-a', labels: { ...s.deployment?.metadata.labels, [rolloutIndexKey(CONTROLLER)]: ROLLING }, ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'a', uid: 'uid-a', controller: true }] }, status: { observedGeneration: 1, replicas: 1, updatedReplicas: 0 } });
    const census: RolloutCensus = { deployments: [holder, s.deployment as Deployment] };
    const queued = invoke({ ...budgeted, rollouts: census }).next;
    const a = answer(facts(queued, { rolloutBudget: 1, census, templateHash: 'template-hash-2' }));
    expect(a).toMatchObject({ state: 'queued', sentence: `GatewayConfiguration ${GC} generation 1 is not applied for 14m: its LB rollout waits for the rollout budget (1 at once), #1 in line; 1 slot held (${NS}/sllbr-a: rolling); the LB Pods keep running generation 1` });
    expect(evidence({ ...facts(queued, { rolloutBudget: 1, census, templateHash: 'template-hash-2' }), pdb: undefined }, a).budget).toBe(`LB_ROLLOUT_BUDGET=1: slots held by ${NS}/sllbr-a (rolling); first in line`);
  });

  it('a stuck rollout: kubectl rollout status words, and for how long', () => {
    const s = applied();
    const stuck = { ...s, deployment: withRollout(s.deployment, { replicas: 2, updatedReplicas: 1, availableReplicas: 1, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', lastTransitionTime: minutes(4).toISOString() }] }) };
    expect(answer(facts(stuck))).toMatchObject({ state: 'stuck', sentence: `GatewayConfiguration ${GC} generation 1 is applied to Deployment ${NS}/sllbr-${GW}, but its LB rollout is stuck for 10m: deployment "sllbr-${GW}" exceeded its progress deadline; 1/2 replicas updated, 1 available, 1 old replica still there` });
  });

  it('invalid parameters: the Accepted message, and what keeps running', () => {
    const s = applied();
    const invalid = invoke({ ...s, gatewayConfiguration: null }).next;
    const a = answer(facts(invalid));
    expect(a.state).toBe('invalid');
    expect(a.sentence).toMatch(new RegExp(`^Gateway ${NS}/${GW} is not accepted for 14m: .+${GC}.+; the LB Pods keep running GatewayConfiguration ${GC} generation 1$`));
  });

  it('a name collision: who controls the Deployment', () => {
    const s = applied();
    const foreign = DeploymentSchema.parse({ ...structuredClone(s.deployment), metadata: { ...structuredClone(s.deployment?.metadata), ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'someone', uid: 'u', controller: true }] } });
    const collided = invoke({ ...s, deployment: foreign }).next;
    expect(answer(facts(collided))).toMatchObject({ state: 'collision', sentence: `Gateway ${NS}/${GW} is not programmed: Deployment ${NS}/sllbr-${GW} exists but is controlled by ConfigMap/someone, not by this Gateway; it is not adopted or changed` });
  });

  it('not ours: another controller\'s class, or none', () => {
    const s = applied();
    expect(answer(facts({ ...s, gatewayClass: gatewayClass('example.com/other') }))).toMatchObject({ state: 'not-ours', sentence: `Gateway ${NS}/${GW} is not reconciled by ${CONTROLLER}: its GatewayClass meridio belongs to controller example.com/other` });
    expect(answer(facts({ ...s, gatewayClass: null })).sentence).toBe(`Gateway ${NS}/${GW} is not reconciled by ${CONTROLLER}: its GatewayClass meridio does not exist`);
  });

  it('pending: the configuration moved on and no reconcile has written it yet', () => {
    const s = applied();
    expect(answer(facts({ ...s, gatewayConfiguration: gatewayConfiguration({}, { generation: 3 }) }))).toMatchObject({ state: 'pending', sentence: `GatewayConfiguration ${GC} generation 3 is not applied yet: the GatewayConfiguration moved from generation 1 to 3, and no reconcile has written it since; the LB Pods keep running generation 1` });
    expect(answer(facts(s, { templateHash: 'newer' })).sentence).toContain("the controller's LB template changed");
  });

  it('not reconciled yet', () => {
    expect(answer(facts(observed()))).toMatchObject({ state: 'not-reconciled' });
  });
});

describe('explain: the evidence', () => {
  it('compares the recorded inputs with the live ones, and says which routes attach and why the others do not', () => {
    const s = applied();
    const routes = [route('r-in', ['10.0.0.1/32']), route('r-section', ['10.0.0.2/32'], [{ name: GW, sectionName: 'nope' }]), route('r-other', ['10.0.0.3/32'], [{ name: 'another' }])];
    const f = { ...facts({ ...s, routes, gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }) }), pdb: undefined };
    const e = evidence(f, answer(f));
    expect(e.applied).toEqual([
      { input: 'GatewayConfiguration', recorded: `${GC} generation 1`, live: `${GC} generation 2`, same: false },
      { input: 'Gateway generation', recorded: '1', live: '1', same: true },
      { input: 'LB template hash', recorded: TEMPLATE_HASH, live: TEMPLATE_HASH, same: true },
    ]);
    expect(e.routes).toEqual([
      { route: `${NS}/r-in`, attached: true, why: 'listener all' },
      { route: `${NS}/r-section`, attached: false, why: expect.stringMatching(/^NoMatchingParent: parentRef.sectionName nope names no listener/) },
    ]);
    expect(e.rollout).toBe(`deployment "sllbr-${GW}" successfully rolled out`);
    expect(e.pdb).toMatch(/^none: LB PodDisruptionBudgets are off/);
    const text = renderExplain(answer(f), e);
    expect(text.split('\n')[0]).toBe(answer(f).sentence);
    expect(text).toContain('Applied state');
  });

  it('shows the newest Warnings of the Gateway, its Deployment and its routes only', () => {
    const ev = (name: string, kind: string, obj: string, when: string, type = 'Warning') => WarningEventSchema.parse({ metadata: { name }, type, reason: name, note: 'n', regarding: { kind, name: obj }, eventTime: when });
    const lines = warningsAbout([ev('old', 'Gateway', GW, '2025-01-01T00:00:00Z'), ev('new', 'Deployment', `sllbr-${GW}`, '2025-01-01T00:05:00Z'), ev('normal', 'Gateway', GW, '2025-01-01T00:06:00Z', 'Normal'), ev('else', 'Gateway', 'x', '2025-01-01T00:07:00Z')], [{ kind: 'Gateway', name: GW }, { kind: 'Deployment', name: `sllbr-${GW}` }], 5);
    expect(lines.map((l) => l.reason)).toEqual(['new', 'old']);
    expect(deadLettered([ev('RetriesExhausted', 'Gateway', GW, NOW)], GW)).toBe(1);
  });
});

describe('explain helpers', () => {
  it.each([
    [VAP_ERROR + ' (HTTP 422)', 'the Deployment write is denied by ValidatingAdmissionPolicy deny-lb (HTTP 422)'],
    ['admission webhook "lb.example.com" denied the request: no (HTTP 400)', 'the Deployment write is denied by admission webhook lb.example.com (HTTP 400)'],
    ['deployments.apps "x" is forbidden: User "system:serviceaccount:a:b" cannot update resource (HTTP 403)', 'the controller is not allowed to write the Deployment (RBAC) (HTTP 403)'],
    ['the server is on fire', 'the Deployment write failed: the server is on fire'],
  ])('failurePhrase(%s)', (error, phrase) => expect(failurePhrase(error)).toBe(phrase));

  it.each([
    [{ metadata: { generation: 2 }, status: { observedGeneration: 1 } }, 'Waiting for deployment spec update to be observed...'],
    [{ status: { observedGeneration: 1, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] } }, 'deployment "d" exceeded its progress deadline'],
    [{ status: { observedGeneration: 1, updatedReplicas: 1 } }, 'Waiting for deployment "d" rollout to finish: 1 out of 2 new replicas have been updated...'],
    [{ status: { observedGeneration: 1, updatedReplicas: 2, replicas: 3 } }, 'Waiting for deployment "d" rollout to finish: 1 old replicas are pending termination...'],
    [{ status: { observedGeneration: 1, updatedReplicas: 2, replicas: 2, availableReplicas: 1 } }, 'Waiting for deployment "d" rollout to finish: 1 of 2 updated replicas are available...'],
    [{ status: { observedGeneration: 1, updatedReplicas: 2, replicas: 2, availableReplicas: 2 } }, 'deployment "d" successfully rolled out'],
  ])('rolloutStatus as kubectl: %j', (d, message) => {
    const { metadata, status } = d as { metadata?: Record<string, unknown>; status: Record<string, unknown> };
    const deployment = DeploymentSchema.parse({ metadata: { name: 'd', generation: 1, ...metadata }, spec: { replicas: 2, template: { spec: { containers: [] } } }, status });
    expect(rolloutStatus(deployment).message).toBe(message);
  });

  it.each([
    [0, '0s'], [119, '119s'], [14 * 60, '14m'], [3 * 3600, '3h'], [3 * 3600 + 12 * 60, '3h12m'], [2 * 86400 + 4 * 3600, '2d4h'],
  ])('age of %ss is %s', (seconds, text) => expect(age(NOW, new Date(Date.parse(NOW) + seconds * 1000))).toBe(text));
});

describe('explain: the PodDisruptionBudget', () => {
  it('says whether PDBs are on, whether this one exists, and what it allows', () => {
    const s = applied();
    const f = facts(s);
    const a = answer(f);
    expect(evidence({ ...f, pdb: null }, a).pdb).toBe(`none yet: LB_PDB_MAX_UNAVAILABLE is set, the next reconcile creates sllbr-${GW}`);
    const pdb = PodDisruptionBudgetSchema.parse({ metadata: { name: `sllbr-${GW}`, namespace: NS, ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: GW, uid: s.gateway?.metadata.uid, controller: true }] }, spec: { maxUnavailable: 1 }, status: { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1 } });
    expect(evidence({ ...f, pdb }, a).pdb).toBe(`sllbr-${GW}: maxUnavailable 1; 1 disruption allowed, 2 healthy of 1 needed`);
    const foreign = PodDisruptionBudgetSchema.parse({ ...pdb, metadata: { ...pdb.metadata, ownerReferences: [] } });
    expect(evidence({ ...f, pdb: foreign }, a).pdb).toMatch(/\(not controlled by this Gateway\)/);
  });
});
