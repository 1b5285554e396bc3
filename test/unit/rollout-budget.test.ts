// The rollout budget's decisions, from observed Deployments only: their
// status, and the rollout index label (rollout-index.ts) this controller's
// reconciles keep on them, which is what the census lists by.
// The rollout states follow `kubectl rollout status` (k8s.io/kubectl
// polymorphichelpers DeploymentStatusViewer), the oracle for "in progress",
// but after a rollout the Deployment controller reported complete (degraded:
// rollout-budget-stalls.test.ts).
import fc from 'fast-check';
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, CONDITION_ACCEPTED, CONDITION_APPLIED, TEMPLATE_HASH as TEMPLATE_HASH_KEY } from '../../api/names.js';
import { DeploymentSchema, type Deployment, type Gateway } from '../../api/schemas.js';
import type { RolloutCensus } from '../../functions/reconcile/plan/plan-types.js';
import { nextInLine, rolloutBudget, rolloutState, ROLLOUT_QUEUED } from '../../functions/reconcile/plan/rollout-budget.js';
import { configurationKeys, QUEUED, ROLLING, rolloutIndexKey, templateValue } from '../../functions/reconcile/plan/rollout-index.js';
import { CONDITION_PROGRAMMED } from '../../api/names.js';
import type { Scenario } from './reconcile-fixtures.js';
import { CONTROLLER, GC_UID, LB_SERVICE_ACCOUNT, NS, NOW, TEMPLATE_HASH, gateway, gatewayConfiguration, invoke, observed, planned, templateDeployment } from './reconcile-fixtures.js';

const INDEX_KEY = rolloutIndexKey(CONTROLLER);

const OLD_HASH = 'template-hash-0';
const CONFIGURATION = gatewayConfiguration({}, { generation: 3 });
const CURRENT = { templateHash: TEMPLATE_HASH, configuration: CONFIGURATION };

interface LbOptions {
  hash?: string;
  /** The rollout index label; default: the digest of `hash` (not rolling); null: none. */
  index?: string | null;
  configurationGeneration?: number;
  generation?: number;
  status?: Record<string, unknown>;
  replicas?: number;
}

const SETTLED = { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 };

function lb(gw: string, o: LbOptions = {}): Deployment {
  return DeploymentSchema.parse({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: `sllbr-${gw}`,
      namespace: NS,
      generation: o.generation ?? 1,
      labels: o.index === null ? {} : { [INDEX_KEY]: o.index ?? templateValue(o.hash ?? TEMPLATE_HASH) },
      ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: gw, uid: `uid-${gw}`, controller: true }],
      annotations: {
        [APPLIED_CONFIGURATION_NAME]: 'gc1',
        [APPLIED_CONFIGURATION_UID]: GC_UID,
        [APPLIED_CONFIGURATION_GENERATION]: String(o.configurationGeneration ?? 3),
        [APPLIED_GATEWAY_GENERATION]: '1',
        [TEMPLATE_HASH_KEY]: o.hash ?? TEMPLATE_HASH,
      },
    },
    spec: { replicas: o.replicas ?? 2, template: { metadata: {}, spec: { containers: [{ name: 'lb', image: 'lb:1' }] } } },
    status: o.status ?? SETTLED,
  });
}

const cond = (type: string, status: string, reason: string) => ({ type, status, reason, message: type === CONDITION_ACCEPTED && status === 'True' ? `Gateway accepted by ${CONTROLLER}` : '', lastTransitionTime: NOW });

function gw(name: string, conditions: { accepted?: boolean; queued?: boolean } = {}): Gateway {
  return gateway({
    name,
    uid: `uid-${name}`,
    status: {
      conditions: [
        cond(CONDITION_ACCEPTED, conditions.accepted === false ? 'False' : 'True', conditions.accepted === false ? 'InvalidParameters' : 'Accepted'),
        conditions.queued ? cond(CONDITION_APPLIED, 'False', ROLLOUT_QUEUED) : cond(CONDITION_APPLIED, 'True', 'Applied'),
      ],
      addresses: [],
    },
  } as Parameters<typeof gateway>[0]);
}

describe('rolloutState, as kubectl rollout status judges a Deployment', () => {
  it.each([
    ['settled: every replica updated and available', {}, SETTLED, 'settled'],
    ['the controller has not seen the latest spec', { generation: 2 }, SETTLED, 'rolling'],
    ['fewer updated replicas than wanted', {}, { ...SETTLED, updatedReplicas: 1 }, 'rolling'],
    ['old replicas still terminating', {}, { ...SETTLED, replicas: 3 }, 'rolling'],
    ['updated replicas not yet available', {}, { ...SETTLED, availableReplicas: 1 }, 'rolling'],
    ['the progress deadline passed', {}, { ...SETTLED, updatedReplicas: 1, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] }, 'stuck'],
    ['still progressing (NewReplicaSetAvailable is the settled reason)', {}, { ...SETTLED, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }] }, 'settled'],
  ])('%s', (_, meta, status, expected) => {
    expect(rolloutState(lb('a', { ...meta, status }))).toBe(expected);
  });

  it('a Deployment with no status yet (just created) is rolling', () => {
    expect(rolloutState(lb('a', { status: {} }))).toBe('rolling');
  });
});

describe('rolloutBudget', () => {
  const five = ['a', 'b', 'c', 'd', 'e'];

  it('an edit of a configuration five Gateways share, reconciled all at once before any is queued: only the first goes with a budget of 1', () => {
    // Each census as the fan-out's five reconciles read it: the configuration's line lists every Deployment still at generation 3.
    const census: RolloutCensus = { deployments: five.map((n) => lb(n, { configurationGeneration: 3 })) };
    const edited = { templateHash: TEMPLATE_HASH, configuration: gatewayConfiguration({}, { generation: 4 }) };
    expect(five.map((n) => rolloutBudget(gw(n), 1, census, edited, CONTROLLER).go)).toEqual([true, false, false, false, false]);
    expect(rolloutBudget(gw('c'), 1, census, edited, CONTROLLER).ahead).toEqual([`${NS}/a`, `${NS}/b`]);
    // Another configuration's edit: the same Deployments are nobody's line.
    const another = { templateHash: TEMPLATE_HASH, configuration: gatewayConfiguration({}, { generation: 4, uid: 'another-uid' }) };
    expect(five.map((n) => rolloutBudget(gw(n), 1, census, another, CONTROLLER).go)).toEqual([true, true, true, true, true]);
  });

  it('after a template change, of five Gateways in sync before it, only the first in line goes with a budget of 1', () => {
    const census: RolloutCensus = { deployments: five.map((n) => lb(n, { hash: OLD_HASH })) };
    const verdicts = five.map((n) => rolloutBudget(gw(n), 1, census, CURRENT, CONTROLLER));
    expect(verdicts.map((v) => v.go)).toEqual([true, false, false, false, false]);
    expect(verdicts[3]).toEqual({ go: false, held: [], ahead: [`${NS}/a`, `${NS}/b`, `${NS}/c`] });
  });

  it('a rolling Deployment holds its slot; once it settles on the new template, the next goes', () => {
    const rolling: RolloutCensus = { deployments: [lb('a', { generation: 2, index: ROLLING }), ...five.slice(1).map((n) => lb(n, { hash: OLD_HASH }))] };
    expect(rolloutBudget(gw('b'), 1, rolling, CURRENT, CONTROLLER)).toEqual({ go: false, held: [{ ref: `${NS}/sllbr-a`, state: 'rolling' }], ahead: [] });
    const settled: RolloutCensus = { ...rolling, deployments: [lb('a'), ...rolling.deployments.slice(1)] };
    expect(five.map((n) => rolloutBudget(gw(n), 1, settled, CURRENT, CONTROLLER).go)).toEqual([true, true, false, false, false]);
    // 'a' is in sync: it would plan no write at all; 'b' is first in line.
    expect(rolloutBudget(gw('b'), 1, settled, CURRENT, CONTROLLER).ahead).toEqual([]);
  });

  it('a stuck rollout keeps its slot: the others stay queued', () => {
    const stuck = lb('a', { index: ROLLING, status: { ...SETTLED, updatedReplicas: 0, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] } });
    const census: RolloutCensus = { deployments: [stuck, ...five.slice(1).map((n) => lb(n, { hash: OLD_HASH }))] };
    expect(five.slice(1).map((n) => rolloutBudget(gw(n, { queued: true }), 1, census, CURRENT, CONTROLLER).go)).toEqual([false, false, false, false]);
    expect(nextInLine(1, census, TEMPLATE_HASH, CONTROLLER)).toEqual([]);
  });

  it("a Gateway's own rolling Deployment takes no second slot", () => {
    const census: RolloutCensus = { deployments: [lb('a', { generation: 2, index: ROLLING }), lb('b')] };
    expect(rolloutBudget(gw('a'), 1, census, CURRENT, CONTROLLER)).toEqual({ go: true, held: [], ahead: [] });
  });

  it('queued Gateways are in line even when their Deployment records the current template (their configuration moved): the label says queued', () => {
    const census: RolloutCensus = { deployments: [lb('a', { index: QUEUED }), lb('b')] };
    expect(rolloutBudget(gw('b'), 1, census, CURRENT, CONTROLLER)).toEqual({ go: false, held: [], ahead: [`${NS}/a`] });
    expect(rolloutBudget(gw('b'), 2, census, CURRENT, CONTROLLER).go).toBe(true);
  });

  it('a Deployment whose label was taken back (its Gateway invalid, of another class, being deleted) is not in line and holds no slot: it would hold them forever', () => {
    const census: RolloutCensus = { deployments: [lb('a', { hash: OLD_HASH, index: null }), lb('b', { hash: OLD_HASH }), lb('c', { generation: 2, index: null })] };
    expect(rolloutBudget(gw('b'), 1, census, CURRENT, CONTROLLER)).toEqual({ go: true, held: [], ahead: [] });
  });

  it('a rolling label on a Deployment that settled (not yet taken back) or is degraded holds no slot: the status decides', () => {
    const degraded = lb('a', { index: ROLLING, replicas: 2, status: { ...SETTLED, availableReplicas: 0, conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }] } });
    const census: RolloutCensus = { deployments: [lb('z', { index: ROLLING }), degraded, lb('b', { hash: OLD_HASH })] };
    expect(rolloutBudget(gw('b'), 1, census, CURRENT, CONTROLLER)).toEqual({ go: true, held: [], ahead: [] });
  });

  it('the Deployments of another controller (another label key) are neither holders nor in line', () => {
    const theirs = (name: string, o: LbOptions): Deployment => {
      const d = lb(name, { ...o, index: null });
      return { ...d, metadata: { ...d.metadata, labels: { [rolloutIndexKey('example.com/other')]: o.index ?? templateValue(OLD_HASH) } } };
    };
    const census: RolloutCensus = { deployments: [theirs('a', { generation: 2, index: ROLLING }), theirs('b', {}), lb('c', { hash: OLD_HASH })] };
    expect(rolloutBudget(gw('c'), 1, census, CURRENT, CONTROLLER)).toEqual({ go: true, held: [], ahead: [] });
    expect(nextInLine(1, census, TEMPLATE_HASH, CONTROLLER)).toEqual([`${NS}/c`]);
  });

  it('a deleted Gateway named by its event (its Deployment waits for the garbage collector) is out of the wake', () => {
    const census: RolloutCensus = { deployments: [lb('a', { generation: 2, index: ROLLING }), lb('b', { hash: OLD_HASH }), lb('c', { hash: OLD_HASH })] };
    expect(nextInLine(1, census, TEMPLATE_HASH, CONTROLLER)).toEqual([]);
    expect(nextInLine(1, census, TEMPLATE_HASH, CONTROLLER, `${NS}/a`)).toEqual([`${NS}/b`]);
    expect(nextInLine(1, census, TEMPLATE_HASH, CONTROLLER, `${NS}/b`)).toEqual([]);
  });

  it('nextInLine wakes the first of the line, one per free slot', () => {
    const census: RolloutCensus = { deployments: [lb('a'), ...five.slice(1).map((n) => lb(n, { hash: OLD_HASH }))] };
    expect(nextInLine(1, census, TEMPLATE_HASH, CONTROLLER)).toEqual([`${NS}/b`]);
    expect(nextInLine(3, census, TEMPLATE_HASH, CONTROLLER)).toEqual([`${NS}/b`, `${NS}/c`, `${NS}/d`]);
    const oneRolling = { ...census, deployments: [lb('a'), lb('b', { generation: 2, index: ROLLING }), ...census.deployments.slice(2)] };
    expect(nextInLine(2, oneRolling, TEMPLATE_HASH, CONTROLLER)).toEqual([`${NS}/c`]);
  });

  it('reconciles that read the same lists never start more rollouts than the budget leaves (no overshoot among them)', () => {
    const arbGateway = fc.record({
      rolling: fc.constantFrom('no', 'yes', 'stuck'),
      behind: fc.boolean(),
      queued: fc.boolean(),
      accepted: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(arbGateway, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 4 }), (specs, budget) => {
        const names = specs.map((_, i) => `g${i}`);
        // The labels as the reconciles leave them: `rolling` on a rollout
        // (kept while it rolls, even for a Gateway turned invalid), taken
        // back from a Gateway not accepted otherwise, `queued` on a queued Gateway
        // the template digest does not show in line.
        const indexOf = (s: (typeof specs)[number]): string | null | undefined => (s.rolling !== 'no' ? ROLLING : !s.accepted ? null : s.queued && !s.behind ? QUEUED : undefined);
        const deployments = specs.map((s, i) =>
          lb(names[i] as string, {
            hash: s.behind ? OLD_HASH : TEMPLATE_HASH,
            index: indexOf(s),
            ...(s.rolling === 'yes' ? { generation: 2 } : {}),
            ...(s.rolling === 'stuck' ? { status: { ...SETTLED, updatedReplicas: 0, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] } } : {}),
          }),
        );
        const gateways = specs.map((s, i) => gw(names[i] as string, { queued: s.queued, accepted: s.accepted }));
        const census = { deployments };
        const inProgress = specs.filter((s) => s.rolling !== 'no').length;
        // Every Gateway the lists show wanting a rollout (accepted, and
        // queued or behind) that would start it now; one not accepted plans
        // no write at all. A want the lists cannot show (a Gateway's own
        // spec edit) is the bounded overshoot of design.md.
        const wants = (i: number): boolean => specs[i]?.rolling === 'no' && specs[i]?.accepted === true && (specs[i]?.queued === true || specs[i]?.behind === true);
        const starters = gateways.filter((g, i) => wants(i) && rolloutBudget(g, budget, census, CURRENT, CONTROLLER).go);
        return starters.length <= Math.max(0, budget - inProgress);
      }),
    );
  });
});

describe('the planner under the rollout budget', () => {
  // A Gateway in sync with the template, then the template's image changes.
  const inSync = (): Scenario => {
    let o = observed({ settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } });
    for (let i = 0; i < 2; i++) o = invoke(o).next;
    return o;
  };
  const newTemplate = (o: Scenario): Scenario => ({
    ...o,
    template: {
      hash: 'template-hash-2',
      deployment: templateDeployment((raw) => {
        ((raw.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0] as { image: string }).image = 'lb:2';
      }),
    },
  });
  const other = (generation: number): Deployment => lb('other', { generation, hash: 'template-hash-2', index: generation > 1 ? ROLLING : undefined });
  const byType = <C extends { type: string }>(conditions: C[] | undefined, type: string): C | undefined => conditions?.find((c) => c.type === type);

  it('a pod-template change asks for the rollout census first; a no-op asks for nothing', () => {
    const o = inSync();
    expect(planned(o).outcome).toBe('in-sync');
    expect(planned(newTemplate(o))).toEqual({ outcome: 'needs-reads', reads: 'rollout-census' });
  });

  it("a configuration's edit that changes the pod template asks for that configuration's line too; its Deployment carries the configuration's labels", () => {
    const o = inSync();
    const keys = configurationKeys(CONTROLLER);
    const cfg = o.gatewayConfiguration as NonNullable<Scenario['gatewayConfiguration']>;
    expect(o.deployment?.metadata.labels).toMatchObject({ [keys.uid]: GC_UID, [keys.generation]: String(cfg.metadata.generation) });
    const edited: Scenario = { ...o, gatewayConfiguration: { ...cfg, metadata: { ...cfg.metadata, generation: (cfg.metadata.generation ?? 0) + 1 }, spec: { ...cfg.spec, horizontalScaling: { replicas: 2, enforceReplicas: true }, networkAttachments: [{ type: 'NAD', nad: { name: 'other', namespace: NS, interface: 'int0' } }] } } };
    expect(planned(edited)).toEqual({ outcome: 'needs-reads', reads: 'rollout-census', configurationLine: { uid: GC_UID, generation: (cfg.metadata.generation ?? 0) + 1 } });
  });

  it('with the slot taken, no write: Applied False RolloutQueued saying what is ahead, Programmed untouched', () => {
    const o = newTemplate(inSync());
    const census: RolloutCensus = { deployments: [o.deployment as Deployment, other(2)] };
    const p = planned({ ...o, rollouts: census });
    if (p.outcome === 'needs-reads' || p.outcome === 'needs-write') throw new Error(`expected a settled plan, got ${p.outcome}`);
    expect(p.outcome).toBe('rollout-queued');
    expect(p.deployment).toEqual({ action: 'none' });
    const applied = byType(p.status?.conditions, CONDITION_APPLIED);
    expect(applied).toMatchObject({ status: 'False', reason: ROLLOUT_QUEUED });
    expect(applied?.message).toMatch(/waits for the rollout budget \(1 at once\): 1 slot held \(team-a\/sllbr-other: rolling\), no Gateway queued before it/);
    expect(byType(p.status?.conditions, CONDITION_PROGRAMMED)).toEqual(byType(o.gateway?.status?.conditions, CONDITION_PROGRAMMED));
    // Queued again with the same census: nothing to write.
    const again = planned({ ...o, gateway: { ...(o.gateway as Gateway), status: { ...o.gateway?.status, conditions: p.status?.conditions ?? [] } } as Gateway, rollouts: census });
    expect(again).toMatchObject({ outcome: 'rollout-queued', statusChanged: false, events: [] });
  });

  it('with a free slot, the write goes', () => {
    const o = newTemplate(inSync());
    const census: RolloutCensus = { deployments: [o.deployment as Deployment, other(1)] };
    expect(planned({ ...o, rollouts: census })).toMatchObject({ outcome: 'needs-write', deployment: { action: 'update' } });
  });

  it('a change that leaves the pod template alone (replicas) never waits, and reads no census', () => {
    const o = inSync();
    const scaled = { ...o, gatewayConfiguration: gatewayConfiguration({ horizontalScaling: { replicas: 3, enforceReplicas: true } }, { generation: 2 }) };
    expect(planned(scaled)).toMatchObject({ outcome: 'needs-write', deployment: { action: 'update' } });
  });

  it('a create never waits', () => {
    expect(planned(observed({ settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT, rolloutBudget: 1 } }))).toMatchObject({ outcome: 'needs-write', deployment: { action: 'create' } });
  });

  it('without a budget, a pod-template change is written at once', () => {
    const o = newTemplate(inSync());
    expect(planned({ ...o, settings: { ...o.settings, rolloutBudget: 0 } })).toMatchObject({ outcome: 'needs-write' });
  });
});
