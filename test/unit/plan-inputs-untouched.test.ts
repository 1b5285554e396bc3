import { cloneJson } from '../../functions/reconcile/plan/clone-json.js';
import { planStatus } from '../../functions/reconcile/plan/plan.js';
import { gatewayConfiguration, invoke, observed, plan, type Scenario } from './reconcile-fixtures.js';

// The planner shares unchanged subtrees of its inputs with its outputs
// (overlayManaged copies only what it changes). That is safe only while
// nothing in it writes into an input: every input here is deep-frozen, and a
// write into a frozen object throws in module (strict) code.

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe('the planner and its inputs', () => {
  it('never writes into the observed objects: create, update, in sync, and the status after a write', () => {
    const created = invoke(observed());
    expect(created.first.outcome).toBe('needs-write');
    const settled = invoke(created.next).next;
    // In sync, on frozen inputs.
    expect(plan(deepFreeze(cloneJson(settled))).outcome).toBe('in-sync');
    // A new configuration generation: an update, planned on frozen inputs, and
    // the body still carries the live object's unmanaged fields.
    const changed: Scenario = deepFreeze({ ...cloneJson(settled), gatewayConfiguration: gatewayConfiguration({ horizontalScaling: { replicas: 5, enforceReplicas: true } }, { generation: 2 }) });
    const update = plan(changed);
    if (update.outcome !== 'needs-write') throw new Error(`expected an update, got ${update.outcome}`);
    expect(update.deployment.action).toBe('update');
    expect(update.deployment.object.spec.replicas).toBe(5);
    expect(update.deployment.object.metadata.resourceVersion).toBe(settled.deployment?.metadata.resourceVersion);
    expect(update.deployment.object.spec.template.spec.containers.map((c) => c.name)).toEqual(settled.deployment?.spec.template.spec.containers.map((c) => c.name));
    // Status after the write, from frozen inputs too.
    expect(planStatus(update.pending, deepFreeze({ ok: true as const, written: cloneJson(update.deployment.object) })).outcome).toBe('applied');
  });

  it('cloneJson copies every level and keeps keys holding undefined', () => {
    const source = { a: [{ b: 1 }, 'x', null], c: { d: { e: true } }, f: undefined };
    const copy = cloneJson(source);
    expect(copy).toEqual(source);
    expect('f' in copy).toBe(true);
    expect(copy.a).not.toBe(source.a);
    expect(copy.a[0]).not.toBe(source.a[0]);
    expect(copy.c.d).not.toBe(source.c.d);
  });
});
