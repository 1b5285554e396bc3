import { APPLIED_CONFIGURATION_GENERATION, APPLIED_GATEWAY_GENERATION, TEMPLATE_HASH as TEMPLATE_HASH_KEY } from '../../api/names.js';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE, CONDITION_PROGRAMMED } from '../../api/names.js';
import type { SettledPlan, WriteFailure } from '../../functions/reconcile/plan/plan-types.js';
import { DeploymentSchema, type Condition, type Deployment } from '../../api/schemas.js';
import { CONTROLLER, GC, GW, LATER, NOW, NS, gateway, gatewayClass, gatewayConfiguration, observed, route, simulateServer, withStatus, invoke, plan, settle, type Scenario } from './reconcile-fixtures.js';

const DEPLOYMENT = `${NS}/sllbr-${GW}`;

function cond(p: SettledPlan, type: string): Condition | undefined {
  return p.status?.conditions.find((c) => c.type === type);
}

function settled(o: Scenario): Scenario {
  return invoke(o).next;
}

function expectQuiet(o: Scenario): void {
  const again = settle({ ...o, now: LATER });
  expect(again.deployment).toEqual({ action: 'none' });
  expect(again.statusChanged).toBe(false);
  expect(again.events).toEqual([]);
}

function withAvailability(d: Deployment, available: number): Deployment {
  return DeploymentSchema.parse({ ...d, status: { observedGeneration: 1, replicas: 2, availableReplicas: available } });
}

describe('plan: nothing to do', () => {
  it('a deleted Gateway', () => {
    expect(plan(observed({ gateway: null }))).toEqual({
      deployment: { action: 'none' },
      status: null,
      statusChanged: false,
      events: [],
      outcome: 'not-found',
    });
  });

  it('a Gateway being deleted', () => {
    expect(plan(observed({ gateway: gateway({ deletionTimestamp: NOW }) })).outcome).toBe('not-found');
  });

  it('a class that is not ours, never accepted by us', () => {
    for (const gatewayClassValue of [gatewayClass('example.com/other'), null, gatewayClass(CONTROLLER, 'other-class')]) {
      expect(plan(observed({ gatewayClass: gatewayClassValue }))).toEqual({
        deployment: { action: 'none' },
        status: null,
        statusChanged: false,
        events: [],
        outcome: 'not-ours',
      });
    }
  });
});

describe('plan: ownership transfer', () => {
  it('resets an Accepted=True we set to Unknown/Pending and touches nothing else', () => {
    const ours = settled(settled(observed({ routes: [route('r', ['20.0.0.1/32'])] })));
    const before = ours.gateway!.status!;
    const moved = settle({ ...ours, gatewayClass: gatewayClass('example.com/other'), now: LATER });
    expect(moved.outcome).toBe('not-ours');
    expect(moved.deployment).toEqual({ action: 'none' });
    expect(moved.statusChanged).toBe(true);
    expect(moved.events).toEqual([]);
    expect(cond(moved, CONDITION_ACCEPTED)).toEqual({
      type: CONDITION_ACCEPTED,
      status: 'Unknown',
      reason: 'Pending',
      message: 'Waiting for controller',
      observedGeneration: 1,
      lastTransitionTime: LATER,
    });
    const others = (list: Condition[]) => list.filter((c) => c.type !== CONDITION_ACCEPTED);
    expect(others(moved.status!.conditions)).toEqual(others(before.conditions ?? []));
    expect(moved.status!.addresses).toEqual([{ type: 'IPAddress', value: '20.0.0.1' }]);
    // Once reset, it is no longer ours to touch.
    const after = { ...ours, gateway: withStatus(ours.gateway!, moved.status), gatewayClass: gatewayClass('example.com/other') };
    expect(plan(after)).toMatchObject({ status: null, statusChanged: false, outcome: 'not-ours' });
  });

  it('leaves an Accepted=True set by another controller alone', () => {
    const gw = gateway({
      status: {
        conditions: [
          { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Gateway accepted by example.com/other', lastTransitionTime: NOW },
        ],
      },
    });
    expect(settle(observed({ gateway: gw, gatewayClass: gatewayClass('example.com/other') })).status).toBeNull();
  });
});

describe('plan: create, apply, stay quiet', () => {
  it('creates the Deployment, then reports the status table for a fresh Deployment', () => {
    const o = observed({ routes: [route('r', ['20.0.0.2/32', '20.0.0.1/32'])] });
    const first = plan(o);
    expect(first.outcome).toBe('needs-write');
    expect(first.deployment.action).toBe('create');
    // Status and Events wait for the write's outcome (planStatus).
    expect(Object.keys(first).sort()).toEqual(['deployment', 'outcome', 'pending']);
    if (first.deployment.action !== 'create') return;
    expect(first.deployment.object.metadata.name).toBe(`sllbr-${GW}`);

    const { plan: second, next } = invoke(o);
    expect(second.outcome).toBe('applied');
    expect(second.deployment).toEqual({ action: 'none' });
    expect(second.statusChanged).toBe(true);
    expect(second.status?.addresses).toEqual([
      { type: 'IPAddress', value: '20.0.0.1' },
      { type: 'IPAddress', value: '20.0.0.2' },
    ]);
    expect(second.status?.conditions).toEqual([
      {
        type: CONDITION_ACCEPTED,
        status: 'True',
        reason: 'Accepted',
        message: `Gateway accepted by ${CONTROLLER}`,
        observedGeneration: 1,
        lastTransitionTime: NOW,
      },
      {
        type: CONDITION_PROGRAMMED,
        status: 'True',
        reason: 'Programmed',
        message: `Deployment ${DEPLOYMENT} is programmed with GatewayConfiguration ${GC} generation 1 (Pods may still be initializing)`,
        observedGeneration: 1,
        lastTransitionTime: NOW,
      },
      {
        type: CONDITION_APPLIED,
        status: 'True',
        reason: 'Applied',
        message: `Deployment ${DEPLOYMENT} has GatewayConfiguration ${GC} generation 1 applied (Gateway generation 1)`,
        observedGeneration: 1,
        lastTransitionTime: NOW,
      },
      {
        type: CONDITION_LB_AVAILABLE,
        status: 'Unknown',
        reason: 'Pending',
        message: 'No Deployment status observed yet',
        observedGeneration: 1,
        lastTransitionTime: NOW,
      },
    ]);
    expect(second.events).toEqual([
      {
        type: 'Normal',
        reason: 'GatewayConfigurationApplied',
        action: 'Create',
        note: `Created Deployment ${DEPLOYMENT} with GatewayConfiguration ${GC} generation 1`,
      },
    ]);
    expectQuiet(next);
  });

  it('reports LB availability from the Deployment status', () => {
    const o = settled(observed());
    const up = settle({ ...o, deployment: withAvailability(o.deployment!, 2) });
    expect(cond(up, CONDITION_LB_AVAILABLE)).toMatchObject({ status: 'True', reason: 'Available', message: '2/2 LB replicas available' });
    const down = settle({ ...o, deployment: withAvailability(o.deployment!, 0) });
    expect(cond(down, CONDITION_LB_AVAILABLE)).toMatchObject({
      status: 'False',
      reason: 'NoAvailableReplicas',
      message: '0/2 LB replicas available',
    });
    expect(up.deployment).toEqual({ action: 'none' });
    expect(up.events).toEqual([]);
  });

  it('updates when the GatewayConfiguration changes and announces the new generation once', () => {
    const o = settled(observed());
    const bumped = { ...o, gatewayConfiguration: gatewayConfiguration({ horizontalScaling: { replicas: 4 } }, { generation: 2 }) };
    const first = plan(bumped);
    expect(first.deployment.action).toBe('update');
    if (first.deployment.action !== 'update') return;
    expect(first.deployment.object.spec.replicas).toBe(4);
    expect(first.deployment.object.metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION]).toBe('2');
    expect(first.deployment.object.metadata.resourceVersion).toBe(o.deployment!.metadata.resourceVersion);

    const { plan: second, next } = invoke(bumped);
    expect(second.outcome).toBe('applied');
    expect(cond(second, CONDITION_PROGRAMMED)?.message).toContain(`GatewayConfiguration ${GC} generation 2`);
    expect(cond(second, CONDITION_APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    expect(second.events).toEqual([
      {
        type: 'Normal',
        reason: 'GatewayConfigurationApplied',
        action: 'Update',
        note: `Updated Deployment ${DEPLOYMENT} to GatewayConfiguration ${GC} generation 2 (was GatewayConfiguration ${GC} generation 1)`,
      },
    ]);
    expectQuiet(next);
  });

  it('records a Gateway generation or template change without an Event', () => {
    const o = settled(observed());
    const newGateway = { ...o, gateway: withStatus(gateway({ generation: 2 }), o.gateway!.status as never) };
    const first = plan(newGateway);
    expect(first.deployment.action).toBe('update');
    if (first.deployment.action === 'update') {
      expect(first.deployment.object.metadata.annotations?.[APPLIED_GATEWAY_GENERATION]).toBe('2');
      // Only metadata changes: once the server has defaulted the body, the
      // spec is what it was, so the pod template hash and the Pods stay.
      const stored = simulateServer(first.deployment.object, o.deployment, '999');
      expect(stored.spec).toEqual(o.deployment!.spec);
    }
    const { plan: second } = invoke(newGateway);
    expect(second.events).toEqual([]);
    expect(second.status?.conditions.every((c) => c.observedGeneration === 2)).toBe(true);

    const newTemplate = { ...o, template: { ...o.template, hash: 'template-hash-2' } };
    const t = plan(newTemplate);
    expect(t.deployment.action === 'update' && t.deployment.object.metadata.annotations?.[TEMPLATE_HASH_KEY]).toBe('template-hash-2');
    expect(invoke(newTemplate).plan.events).toEqual([]);
  });

  it('updates addresses alone when routes change', () => {
    const o = settled(observed());
    const p = settle({ ...o, routes: [route('r', ['fd00::1/128'])] });
    expect(p.deployment).toEqual({ action: 'none' });
    expect(p.statusChanged).toBe(true);
    expect(p.status?.addresses).toEqual([{ type: 'IPAddress', value: 'fd00::1' }]);
    expect(p.events).toEqual([]);
  });

  it('keeps conditions of other controllers in place', () => {
    const foreign = { type: 'example.com/Audited', status: 'True', reason: 'Ok', message: 'x', lastTransitionTime: NOW };
    const o = observed({ gateway: gateway({ status: { conditions: [foreign] } }) });
    const { plan: p } = invoke(o);
    expect(p.status?.conditions[0]).toEqual(foreign);
    expect(p.status?.conditions.map((c) => c.type)).toEqual([
      'example.com/Audited',
      CONDITION_ACCEPTED,
      CONDITION_PROGRAMMED,
      CONDITION_APPLIED,
      CONDITION_LB_AVAILABLE,
    ]);
  });

  it('is deterministic', () => {
    const o = settled(observed({ routes: [route('r', ['20.0.0.1/32'])] }));
    const bumped = { ...o, gatewayConfiguration: gatewayConfiguration({}, { generation: 3 }) };
    expect(JSON.stringify(plan(bumped))).toBe(JSON.stringify(plan(bumped)));
  });
});

describe('plan: write failures', () => {
  const denied: WriteFailure = { class: 'persistent', code: 403, message: 'admission webhook "deny.example.com" denied the request' };

  it('a failed update keeps Programmed=True, sets Applied=False naming both generations and the error, and warns', () => {
    const o = settled(observed());
    const stored = o.gateway!.status!.conditions!;
    const bumped = { ...o, gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }), now: LATER };
    for (const failure of [denied, { class: 'transient' as const, code: 503, message: 'etcd leader changed' }]) {
      const { plan: p, next } = invoke(bumped, failure);
      expect(p.outcome).toBe('write-failed');
      expect(p.deployment).toEqual({ action: 'none' });
      expect(cond(p, CONDITION_PROGRAMMED)).toEqual(stored.find((c) => c.type === CONDITION_PROGRAMMED));
      expect(cond(p, CONDITION_ACCEPTED)).toEqual(stored.find((c) => c.type === CONDITION_ACCEPTED));
      const applied = cond(p, CONDITION_APPLIED);
      expect(applied).toMatchObject({ status: 'False', reason: 'ApplyFailed', lastTransitionTime: LATER });
      expect(applied?.message).toBe(
        `Deployment ${DEPLOYMENT} has GatewayConfiguration ${GC} generation 1 applied, latest is generation 2: ${failure.message} (HTTP ${failure.code})`,
      );
      expect(p.events).toEqual([{ type: 'Warning', reason: 'ApplyFailed', action: 'Update', note: applied?.message }]);
      // The Deployment is unchanged: it still says generation 1.
      expect(next.deployment?.metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION]).toBe('1');
    }
  });

  it('a later success clears ApplyFailed', () => {
    const o = settled(observed());
    const bumped = { ...o, gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }) };
    const failed = invoke(bumped, denied).next;
    const { plan: p, next } = invoke(failed);
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    expectQuiet(next);
  });

  it('a permanent failure to create sets Programmed=False/Invalid', () => {
    const refused: WriteFailure = { class: 'permanent', code: 422, message: 'Deployment.apps "sllbr-gw1" is invalid' };
    const { plan: p } = invoke(observed(), refused);
    expect(cond(p, CONDITION_PROGRAMMED)).toMatchObject({
      status: 'False',
      reason: 'Invalid',
      message: `Deployment ${DEPLOYMENT} could not be created: ${refused.message} (HTTP 422)`,
    });
    expect(cond(p, CONDITION_APPLIED)?.message).toContain('has no recorded GatewayConfiguration applied, latest is generation 1');
    expect(p.events).toMatchObject([{ type: 'Warning', reason: 'ApplyFailed', action: 'Create' }]);
  });

  it('a transient failure to create leaves the stored Programmed exactly as it was', () => {
    const initial = { type: 'Programmed', status: 'Unknown', reason: 'Pending', message: 'Waiting for controller', lastTransitionTime: '1970-01-01T00:00:00Z' };
    const o = observed({ gateway: gateway({ generation: 3, status: { conditions: [initial] } }) });
    const { plan: p } = invoke(o, { class: 'transient', message: 'connection reset' });
    expect(cond(p, CONDITION_PROGRAMMED)).toEqual(initial);
    expect(cond(p, CONDITION_ACCEPTED)).toMatchObject({ status: 'True' });
  });

  it('retries exhausted and the write fails again: Applied=False/RetriesExhausted with the last error', () => {
    const o = settled(observed());
    const deadLettered = {
      ...o,
      gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }),
      retriesExhausted: { message: 'event abc dead-lettered after 5 attempts (HTTP 503)' },
    };
    // The dead-letter path still tries the write once; status follows its outcome.
    const { first, plan: p } = invoke(deadLettered, { class: 'transient', code: 503, message: 'etcd leader changed' });
    expect(first.deployment.action).toBe('update');
    expect(p.statusChanged).toBe(true);
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'False', reason: 'RetriesExhausted' });
    expect(cond(p, CONDITION_APPLIED)?.message).toContain('generation 1 applied, latest is generation 2');
    expect(cond(p, CONDITION_APPLIED)?.message).toContain('event abc dead-lettered');
    expect(cond(p, CONDITION_APPLIED)?.message).toContain('last error: etcd leader changed (HTTP 503)');
    expect(cond(p, CONDITION_PROGRAMMED)).toMatchObject({ status: 'True' });
    expect(p.events).toMatchObject([{ type: 'Warning', reason: 'RetriesExhausted' }]);
  });

  it('retries exhausted but the late write succeeds: Applied=True', () => {
    const o = settled(observed());
    const { plan: p } = invoke({ ...o, gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }), retriesExhausted: { message: 'late' } });
    expect(p.outcome).toBe('applied');
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
  });

  it('retries exhausted but already applied: Applied stays True', () => {
    const o = settled(observed());
    const p = settle({ ...o, retriesExhausted: { message: 'late dead letter' } });
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'True' });
    expect(p.statusChanged).toBe(false);
    expect(p.events).toEqual([]);
  });
});

describe('plan: name collision', () => {
  const foreign = (ownerReferences: unknown[]) =>
    DeploymentSchema.parse({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: `sllbr-${GW}`, namespace: NS, resourceVersion: '9', ownerReferences },
      spec: { replicas: 1, template: { spec: { containers: [{ name: 'x', image: 'x' }] } } },
    });

  it.each([
    [[], 'no controller'],
    [[{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u', controller: true }], 'ReplicaSet/rs'],
    [[{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: GW, uid: 'old-uid', controller: true }], `Gateway/${GW} (uid old-uid)`],
    [[{ apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u' }], 'no controller'],
  ])('refuses to adopt a Deployment controlled by %j', (owners, owner) => {
    const o = observed({ deployment: foreign(owners) });
    const p = settle(o);
    expect(p.outcome).toBe('collision');
    expect(p.deployment).toEqual({ action: 'none' });
    expect(cond(p, CONDITION_PROGRAMMED)).toMatchObject({
      status: 'False',
      reason: 'Invalid',
      message: `Deployment ${DEPLOYMENT} exists but is not controlled by this Gateway (controller: ${owner}); it is not adopted or changed`,
    });
    expect(cond(p, CONDITION_ACCEPTED)).toMatchObject({ status: 'True' });
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
    expect(cond(p, CONDITION_LB_AVAILABLE)).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    expect(p.events).toEqual([{ type: 'Warning', reason: 'NameCollision', action: 'Reconcile', note: cond(p, CONDITION_PROGRAMMED)?.message }]);
    // The same collision seen again is not news.
    expectQuiet(invoke(o).next);
  });
});

describe('plan: invalid parameters', () => {
  const noRef = () => gateway({ parametersRef: null });

  it('without a Deployment: Accepted=False, Programmed=False/Invalid, Applied Unknown/Pending, one Warning', () => {
    const o = observed({ gateway: noRef() });
    const p = settle(o);
    expect(p.outcome).toBe('invalid');
    expect(p.deployment).toEqual({ action: 'none' });
    expect(cond(p, CONDITION_ACCEPTED)).toMatchObject({ status: 'False', reason: 'InvalidParameters' });
    expect(cond(p, CONDITION_ACCEPTED)?.message).toContain('parametersRef is missing');
    expect(cond(p, CONDITION_PROGRAMMED)).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    expect(p.events).toEqual([
      { type: 'Warning', reason: 'InvalidParameters', action: 'Validate', note: cond(p, CONDITION_ACCEPTED)?.message },
    ]);
    expectQuiet(invoke(o).next);
  });

  it('with our Deployment serving: Programmed stays True naming what runs, nothing is written', () => {
    const o = settled(observed());
    const invalid = {
      ...o,
      gatewayConfiguration: gatewayConfiguration({ internalSubnets: [{ cidr: '0.0.0.0/0' }] }, { generation: 2 }),
    };
    const p = settle(invalid);
    expect(p.deployment).toEqual({ action: 'none' });
    expect(cond(p, CONDITION_ACCEPTED)?.message).toContain('"0.0.0.0/0" is a default route');
    expect(cond(p, CONDITION_PROGRAMMED)).toMatchObject({
      status: 'True',
      message: `Deployment ${DEPLOYMENT} is programmed with GatewayConfiguration ${GC} generation 1 (Pods may still be initializing)`,
    });
    expect(cond(p, CONDITION_APPLIED)).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    expect(cond(p, CONDITION_APPLIED)?.message).toContain(`keeps GatewayConfiguration ${GC} generation 1`);
    expectQuiet(invoke(invalid).next);
  });

  it('a missing GatewayConfiguration', () => {
    const p = settle(observed({ gatewayConfiguration: null }));
    expect(cond(p, CONDITION_ACCEPTED)?.message).toBe(`GatewayConfiguration "${NS}/${GC}" not found`);
  });

  it('recovers when the parameters become valid again', () => {
    const invalid = settled(observed({ gateway: noRef() }));
    const fixed = { ...invalid, gateway: withStatus(gateway({ generation: 2 }), invalid.gateway!.status as never) };
    const { plan: p, next } = invoke(fixed);
    expect(p.outcome).toBe('applied');
    expect(cond(p, CONDITION_ACCEPTED)).toMatchObject({ status: 'True', observedGeneration: 2, lastTransitionTime: NOW });
    expectQuiet(next);
  });
});
