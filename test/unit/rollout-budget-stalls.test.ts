// The rollout budget's line must move on (issue 40, item 4): who is in line
// is only a Gateway of this controller that is accepted and behind; one that
// leaves the class, is being deleted or turns invalid leaves the line at
// once (its reconcile takes the rollout index label off its Deployment, and
// a census without the label does not see it); a Deployment that lost
// availability without a pod-template change holds no slot; and only this
// controller's Deployments are counted (the label's key names it). Every
// expected key and message is spelled out here, not derived from the
// implementation.
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, CONDITION_ACCEPTED, CONDITION_APPLIED, TEMPLATE_HASH as TEMPLATE_HASH_KEY } from '../../api/names.js';
import { DeploymentSchema, type Deployment, type Gateway } from '../../api/schemas.js';
import type { RolloutCensus } from '../../functions/reconcile/plan/plan-types.js';
import { nextInLine, rolloutBudget, rolloutState } from '../../functions/reconcile/plan/rollout-budget.js';
import { ROLLING as ROLLING_VALUE, rolloutIndexKey, templateValue } from '../../functions/reconcile/plan/rollout-index.js';
import { CONTROLLER, GC_UID, LB_SERVICE_ACCOUNT, NS, NOW, TEMPLATE_HASH, gateway, gatewayClass, gatewayConfiguration, invoke, observed, planned, templateDeployment } from './reconcile-fixtures.js';

const OLD_HASH = 'template-hash-0';
const OTHER_CONTROLLER = 'example.com/other-controller';
const CURRENT = { templateHash: TEMPLATE_HASH, configuration: gatewayConfiguration({}, { generation: 3 }) };
const ACCEPTED_BY_US = `Gateway accepted by ${CONTROLLER}`;

const SETTLED = { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }] };
const ROLLING = { observedGeneration: 1, replicas: 3, updatedReplicas: 1, availableReplicas: 2, conditions: [{ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated' }] };
const STUCK = { observedGeneration: 1, replicas: 3, updatedReplicas: 1, availableReplicas: 2, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] };
// The Deployment controller said the rollout completed (one ReplicaSet with
// Pods, Progressing NewReplicaSetAvailable); then its Pods went (a drained
// node, a crash loop): no pod-template change is in progress.
const DEGRADED = { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 0, readyReplicas: 0, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }] };

/** `index`: the rollout index label (default: `rolling` for a rolling or stuck status, the template's digest otherwise; null: none). */
function lb(gw: string, o: { hash?: string; status?: Record<string, unknown>; index?: string | null; controller?: string } = {}): Deployment {
  const status = o.status ?? SETTLED;
  const index = o.index === undefined ? (status === ROLLING || status === STUCK ? ROLLING_VALUE : templateValue(o.hash ?? TEMPLATE_HASH)) : o.index;
  return DeploymentSchema.parse({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: `sllbr-${gw}`,
      namespace: NS,
      generation: 1,
      labels: index === null ? {} : { [rolloutIndexKey(o.controller ?? CONTROLLER)]: index },
      ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: gw, uid: `uid-${gw}`, controller: true }],
      annotations: {
        [APPLIED_CONFIGURATION_NAME]: 'gc1',
        [APPLIED_CONFIGURATION_UID]: GC_UID,
        [APPLIED_CONFIGURATION_GENERATION]: '3',
        [APPLIED_GATEWAY_GENERATION]: '1',
        [TEMPLATE_HASH_KEY]: o.hash ?? TEMPLATE_HASH,
      },
    },
    spec: { replicas: 2, template: { metadata: {}, spec: { containers: [{ name: 'lb', image: 'lb:1' }] } } },
    status,
  });
}

interface GwOptions {
  className?: string;
  queued?: boolean;
  accepted?: 'ours' | 'invalid' | 'reset';
  deleting?: boolean;
}

function gw(name: string, o: GwOptions = {}): Gateway {
  const accepted = o.accepted ?? 'ours';
  const acceptedCondition =
    accepted === 'ours'
      ? { type: CONDITION_ACCEPTED, status: 'True', reason: 'Accepted', message: ACCEPTED_BY_US }
      : accepted === 'invalid'
        ? { type: CONDITION_ACCEPTED, status: 'False', reason: 'InvalidParameters', message: 'GatewayConfiguration "ns/missing" not found' }
        : { type: CONDITION_ACCEPTED, status: 'Unknown', reason: 'Pending', message: 'Waiting for controller' };
  const applied = o.queued
    ? { type: CONDITION_APPLIED, status: 'False', reason: 'RolloutQueued', message: 'queued earlier' }
    : { type: CONDITION_APPLIED, status: 'True', reason: 'Applied', message: 'applied' };
  return gateway({
    name,
    uid: `uid-${name}`,
    ...(o.className !== undefined && { className: o.className }),
    ...(o.deleting && { deletionTimestamp: NOW }),
    status: { conditions: [acceptedCondition, applied].map((c) => ({ ...c, observedGeneration: 1, lastTransitionTime: NOW })), addresses: [] },
  });
}

const census = (deployments: Deployment[]): RolloutCensus => ({ deployments });
const INDEX_KEY = rolloutIndexKey(CONTROLLER);
/** The plan takes our label off the Deployment: a metadata-only patch. */
const takesLabelOff = { action: 'record-index', name: 'sllbr-b', labels: { [INDEX_KEY]: null } };
const ref = (name: string): string => `${NS}/${name}`;

describe('issue 40 stall 1: a queued Gateway that moves to another controller\'s class', () => {
  // Budget 1: a rolled (settled now), b queued then moved to class "other" (its reconcile took our label off), c queued.
  const moved = census([lb('a'), lb('b', { hash: OLD_HASH, index: null }), lb('c', { hash: OLD_HASH })]);

  it('is not in line: the settled rollout wakes c, and c goes', () => {
    expect(nextInLine(1, moved, TEMPLATE_HASH, CONTROLLER)).toEqual([ref('c')]);
    expect(rolloutBudget(gw('c', { queued: true }), 1, moved, CURRENT, CONTROLLER)).toMatchObject({ go: true, ahead: [] });
    // Before its reconcile, it was first in line.
    expect(nextInLine(1, census([lb('a'), lb('b', { hash: OLD_HASH }), lb('c', { hash: OLD_HASH })]), TEMPLATE_HASH, CONTROLLER)).toEqual([ref('b')]);
  });

  it('its rolling Deployment, label taken off, no longer holds a slot of ours', () => {
    const rolling = census([lb('a', { status: ROLLING, index: null }), lb('c', { hash: OLD_HASH })]);
    expect(rolloutBudget(gw('c', { queued: true }), 1, rolling, CURRENT, CONTROLLER)).toMatchObject({ go: true, held: [] });
  });

  it('its reconcile takes back the RolloutQueued we wrote, with the Accepted we wrote, and our label off its Deployment', () => {
    const p = planned(observed({ gateway: gw('b', { className: 'other', queued: true }), gatewayClass: gatewayClass(OTHER_CONTROLLER, 'other'), deployment: lb('b', { hash: OLD_HASH }), settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } }));
    if (p.outcome === 'needs-reads' || p.outcome === 'needs-write') throw new Error(`expected a settled plan, got ${p.outcome}`);
    expect(p.outcome).toBe('not-ours');
    const types = (p.status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
    expect(types).toEqual(['Accepted=Unknown/Pending']);
    expect(p.deployment).toEqual(takesLabelOff);
  });

  it('a RolloutQueued under another controller\'s Accepted is not ours to take back', () => {
    const theirs = gw('b', { className: 'other', queued: true });
    const conditions = (theirs.status?.conditions ?? []).map((c) => (c.type === CONDITION_ACCEPTED ? { ...c, message: `Gateway accepted by ${OTHER_CONTROLLER}` } : c));
    const p = planned(observed({ gateway: { ...theirs, status: { ...theirs.status, conditions } } as Gateway, gatewayClass: gatewayClass(OTHER_CONTROLLER, 'other') }));
    expect(p).toMatchObject({ outcome: 'not-ours', status: null, statusChanged: false, deployment: { action: 'none' } });
  });
});

describe('issue 40 stall 2: a queued Gateway being deleted', () => {
  it('its reconcile takes our label off its Deployment (rolling or not): out of the line and of the slots', () => {
    for (const status of [SETTLED, ROLLING]) {
      const p = planned(observed({ gateway: gw('b', { queued: true, deleting: true }), deployment: lb('b', { hash: OLD_HASH, status }), settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } }));
      expect(p).toMatchObject({ outcome: 'not-found', deployment: takesLabelOff });
    }
  });

  it('is not in line once it is off', () => {
    const deleting = census([lb('a'), lb('b', { hash: OLD_HASH, index: null }), lb('c', { hash: OLD_HASH })]);
    expect(nextInLine(1, deleting, TEMPLATE_HASH, CONTROLLER)).toEqual([ref('c')]);
    expect(rolloutBudget(gw('c', { queued: true }), 1, deleting, CURRENT, CONTROLLER).go).toBe(true);
  });
});

describe('issue 40 stall 3: a queued Gateway that turns invalid', () => {
  it('its reconcile takes our label off: not in line, whatever its Applied condition still says', () => {
    const o = observed({ gateway: gw('b', { queued: true }), deployment: lb('b', { hash: OLD_HASH }), gatewayConfiguration: null, settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } });
    expect(planned(o)).toMatchObject({ outcome: 'invalid', deployment: takesLabelOff });
    const invalid = census([lb('a'), lb('b', { hash: OLD_HASH, index: null }), lb('c', { hash: OLD_HASH })]);
    expect(nextInLine(1, invalid, TEMPLATE_HASH, CONTROLLER)).toEqual([ref('c')]);
    expect(rolloutBudget(gw('c', { queued: true }), 1, invalid, CURRENT, CONTROLLER).go).toBe(true);
  });

  it('a rollout it started keeps its label while it rolls: it still counts', () => {
    const o = observed({ gateway: gw('b'), deployment: lb('b', { status: ROLLING }), gatewayConfiguration: null, settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } });
    expect(planned(o)).toMatchObject({ outcome: 'invalid', deployment: { action: 'none' } });
  });
});

describe('issue 40 stall 4: a Deployment degraded without a pod-template change', () => {
  it('is degraded, not rolling', () => {
    expect(rolloutState(lb('a', { status: DEGRADED }))).toBe('degraded');
    // Scaled up past what the Nodes take: the same (no progress estimated after a completed rollout).
    expect(rolloutState(lb('a', { status: { ...DEGRADED, replicas: 3, updatedReplicas: 3, availableReplicas: 2 } }))).toBe('degraded');
    // Old Pods still there: a rollout, even if Progressing still says the last one completed.
    expect(rolloutState(lb('a', { status: { ...DEGRADED, replicas: 3, updatedReplicas: 1 } }))).toBe('rolling');
    // Without a progress deadline there is no Progressing condition to tell: as kubectl rollout status.
    expect(rolloutState(lb('a', { status: { ...DEGRADED, conditions: [] } }))).toBe('rolling');
  });

  it('holds no slot, even with the rolling label not yet taken back: the next in line goes', () => {
    const degraded = census([lb('a', { status: DEGRADED, index: ROLLING_VALUE }), lb('b', { hash: OLD_HASH })]);
    expect(rolloutBudget(gw('b', { queued: true }), 1, degraded, CURRENT, CONTROLLER)).toMatchObject({ go: true, held: [] });
    expect(nextInLine(1, degraded, TEMPLATE_HASH, CONTROLLER)).toEqual([ref('b')]);
  });

  it('settled under the rolling label not yet taken back, then the template changes: it is in line like any behind, so a resync starts one at a time', () => {
    // a, b and c each settled on the old template before their label came back; d was relabelled.
    const stale = census([lb('a', { hash: OLD_HASH, index: ROLLING_VALUE }), lb('b', { hash: OLD_HASH, index: ROLLING_VALUE }), lb('c', { hash: OLD_HASH, index: ROLLING_VALUE }), lb('d', { hash: OLD_HASH })]);
    expect(['a', 'b', 'c', 'd'].map((n) => rolloutBudget(gw(n), 1, stale, CURRENT, CONTROLLER).go)).toEqual([true, false, false, false]);
    expect(rolloutBudget(gw('c'), 1, stale, CURRENT, CONTROLLER).ahead).toEqual([ref('a'), ref('b')]);
    expect(nextInLine(1, stale, TEMPLATE_HASH, CONTROLLER)).toEqual([ref('a')]);
    // On the current template, the same stale label puts it nowhere: neither a slot nor the line.
    expect(nextInLine(1, census([lb('a', { index: ROLLING_VALUE }), lb('b', { hash: OLD_HASH })]), TEMPLATE_HASH, CONTROLLER)).toEqual([ref('b')]);
  });

  it('its reconcile turns the rolling label into the template digest (no rollout, a metadata patch)', () => {
    const o = invoke(invoke(observed({ settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } })).next).next;
    const live = o.deployment as Deployment;
    expect(live.metadata.labels?.[INDEX_KEY]).toBe(ROLLING_VALUE);
    const p = planned({ ...o, deployment: { ...live, status: { ...DEGRADED, observedGeneration: live.metadata.generation } } as Deployment });
    expect(p).toMatchObject({ outcome: 'in-sync', deployment: { action: 'record-index', labels: { [INDEX_KEY]: templateValue(TEMPLATE_HASH) } } });
  });
});

describe('issue 40 item 5: the census counts this controller\'s Deployments only', () => {
  it('a rollout of another controller\'s Gateway holds no slot of ours, and its queued Gateways are not in our line', () => {
    const theirs = census([lb('x', { status: ROLLING, controller: OTHER_CONTROLLER }), lb('y', { hash: OLD_HASH, controller: OTHER_CONTROLLER }), lb('c', { hash: OLD_HASH })]);
    expect(rolloutBudget(gw('c', { queued: true }), 1, theirs, CURRENT, CONTROLLER)).toEqual({ go: true, held: [], ahead: [] });
  });

  it('the label key names the controller', () => {
    expect(rolloutIndexKey(CONTROLLER)).not.toBe(rolloutIndexKey(OTHER_CONTROLLER));
    expect(rolloutIndexKey(CONTROLLER)).toMatch(/^meridio-2\.nordix\.org\/rollout-[0-9a-f]{10}$/);
  });
});

describe('what each slot is held by', () => {
  // gw1 in sync with the template, then the template's image changes.
  const behindTemplate = (): ReturnType<typeof observed> => {
    let o = observed({ settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 2 } });
    for (let i = 0; i < 2; i++) o = invoke(o).next;
    return {
      ...o,
      template: {
        hash: 'template-hash-2',
        deployment: templateDeployment((raw) => {
          ((raw.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0] as { image: string }).image = 'lb:2';
        }),
      },
    };
  };

  it('the verdict names each holder and its state', () => {
    const held = census([lb('a', { status: ROLLING }), lb('b', { status: STUCK }), lb('c', { hash: OLD_HASH })]);
    expect(rolloutBudget(gw('c', { queued: true }), 2, held, CURRENT, CONTROLLER)).toEqual({ go: false, held: [{ ref: ref('sllbr-a'), state: 'rolling' }, { ref: ref('sllbr-b'), state: 'stuck' }], ahead: [] });
  });

  it('the queued message says what each slot is held by; a degraded Deployment is not among them', () => {
    const o = behindTemplate();
    const rollouts = census([o.deployment as Deployment, lb('a', { status: ROLLING }), lb('b', { status: STUCK }), lb('d', { hash: 'template-hash-2', status: DEGRADED, index: ROLLING_VALUE })]);
    const p = planned({ ...o, rollouts });
    if (p.outcome === 'needs-reads' || p.outcome === 'needs-write') throw new Error(`expected a settled plan, got ${p.outcome}`);
    const applied = p.status?.conditions.find((c) => c.type === CONDITION_APPLIED);
    expect(applied).toMatchObject({ status: 'False', reason: 'RolloutQueued' });
    expect(applied?.message).toContain('its rollout waits for the rollout budget (2 at once): 2 slots held (team-a/sllbr-a: rolling; team-a/sllbr-b: stuck: progress deadline exceeded), no Gateway queued before it');
  });

  it('one slot, held by a stuck rollout', () => {
    const o = { ...behindTemplate(), settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } };
    const p = planned({ ...o, rollouts: census([o.deployment as Deployment, lb('b', { status: STUCK })]) });
    if (p.outcome === 'needs-reads' || p.outcome === 'needs-write') throw new Error(`expected a settled plan, got ${p.outcome}`);
    expect(p.status?.conditions.find((c) => c.type === CONDITION_APPLIED)?.message).toContain('(1 at once): 1 slot held (team-a/sllbr-b: stuck: progress deadline exceeded), no Gateway queued before it');
  });
});

describe('a reconcile that takes its Gateway out of the line wakes the next (wakeNext)', () => {
  const BUDGET = { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 };
  // gw1 in sync, then queued for a template change.
  const queuedScenario = (): ReturnType<typeof observed> => {
    let o = observed({ settings: BUDGET });
    for (let i = 0; i < 2; i++) o = invoke(o).next;
    const next = {
      ...o,
      template: {
        hash: 'template-hash-2',
        deployment: templateDeployment((raw) => {
          ((raw.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0] as { image: string }).image = 'lb:2';
        }),
      },
    };
    const queued = planned({ ...next, rollouts: census([next.deployment as Deployment, lb('a', { hash: 'template-hash-2', status: ROLLING })]) });
    if (queued.outcome !== 'rollout-queued') throw new Error(`expected rollout-queued, got ${queued.outcome}`);
    return { ...next, gateway: { ...(next.gateway as Gateway), status: { ...next.gateway?.status, conditions: queued.status?.conditions ?? [] } } as Gateway };
  };
  const settled = (s: ReturnType<typeof observed>) => {
    const p = planned(s);
    if (p.outcome === 'needs-reads' || p.outcome === 'needs-write') throw new Error(`expected a settled plan, got ${p.outcome}`);
    return p;
  };

  it('queued, then its class is another controller\'s: not-ours, and wake', () => {
    expect(settled({ ...queuedScenario(), gatewayClass: gatewayClass(OTHER_CONTROLLER, 'meridio') })).toMatchObject({ outcome: 'not-ours', statusChanged: true, wakeNext: true });
  });

  it('queued, then invalid: wake', () => {
    expect(settled({ ...queuedScenario(), gatewayConfiguration: null })).toMatchObject({ outcome: 'invalid', statusChanged: true, wakeNext: true });
  });

  it('queued, then the change is no longer due (the template went back): in sync, and wake', () => {
    const o = queuedScenario();
    const back = observed({ settings: BUDGET });
    expect(settled({ ...o, template: back.template })).toMatchObject({ outcome: 'in-sync', statusChanged: true, wakeNext: true });
  });

  it('queued again, or its rollout going ahead, or a no-op: no wake', () => {
    const o = queuedScenario();
    const again = planned({ ...o, rollouts: census([o.deployment as Deployment, lb('a', { hash: 'template-hash-2', status: ROLLING })]) });
    expect(again).toMatchObject({ outcome: 'rollout-queued', statusChanged: false });
    expect(again).not.toHaveProperty('wakeNext');
    expect(planned({ ...o, rollouts: census([o.deployment as Deployment]) })).toMatchObject({ outcome: 'needs-write' });
    const inSync = invoke(observed({ settings: BUDGET })).next;
    expect(settled(invoke(inSync).next)).not.toHaveProperty('wakeNext');
  });

  it('the slot holder moving to another controller\'s class frees its slot: wake', () => {
    const o = invoke(invoke(observed({ settings: BUDGET })).next).next;
    const holding = { ...o, deployment: { ...(o.deployment as Deployment), status: ROLLING } as Deployment };
    expect(settled({ ...holding, gatewayClass: gatewayClass(OTHER_CONTROLLER, 'meridio') })).toMatchObject({ outcome: 'not-ours', wakeNext: true });
    // Not in line and holding nothing (settled): moving class wakes no one.
    const idle = { ...o, deployment: { ...(o.deployment as Deployment), metadata: { ...(o.deployment as Deployment).metadata, generation: 1 }, status: { ...SETTLED, replicas: 1, updatedReplicas: 1, availableReplicas: 1 } } as Deployment };
    expect(settled({ ...idle, gatewayClass: gatewayClass(OTHER_CONTROLLER, 'meridio') })).toMatchObject({ outcome: 'not-ours', statusChanged: true });
    expect(settled({ ...idle, gatewayClass: gatewayClass(OTHER_CONTROLLER, 'meridio') })).not.toHaveProperty('wakeNext');
  });

  it('without a budget, nothing is woken', () => {
    const o = queuedScenario();
    expect(settled({ ...o, settings: { ...o.settings, rolloutBudget: 0 }, gatewayClass: gatewayClass(OTHER_CONTROLLER, 'meridio') })).not.toHaveProperty('wakeNext');
  });
});
