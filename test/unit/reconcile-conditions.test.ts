import {
  conditionsEqualIgnoringTime,
  upsertConditions,
  type ConditionSpec,
} from '../../functions/reconcile/plan/conditions.js';
import type { Condition } from '../../api/schemas.js';
import { LATER, NOW } from './reconcile-fixtures.js';

const T0 = '2024-06-01T00:00:00Z';
const foreign: Condition = {
  type: 'example.com/Other',
  status: 'True',
  reason: 'Fine',
  message: 'owned by someone else',
  lastTransitionTime: T0,
  observedGeneration: 7,
  extra: 'kept',
};
const spec = (status: ConditionSpec['status'], message = 'm', generation = 1): ConditionSpec => ({
  type: 'Programmed',
  status,
  reason: status === 'True' ? 'Programmed' : 'Invalid',
  message,
  observedGeneration: generation,
});

describe('upsertConditions', () => {
  it('appends new conditions with now as the transition time', () => {
    expect(upsertConditions([], [spec('True')], NOW)).toEqual([
      { type: 'Programmed', status: 'True', observedGeneration: 1, lastTransitionTime: NOW, reason: 'Programmed', message: 'm' },
    ]);
  });

  it('keeps lastTransitionTime when the status does not change, even if the message does', () => {
    const first = upsertConditions([], [spec('True')], NOW);
    const second = upsertConditions(first, [spec('True', 'other message', 2)], LATER);
    expect(second[0]).toMatchObject({ lastTransitionTime: NOW, message: 'other message', observedGeneration: 2 });
  });

  it('moves lastTransitionTime when the status changes', () => {
    const first = upsertConditions([], [spec('True')], NOW);
    expect(upsertConditions(first, [spec('False')], LATER)[0]?.lastTransitionTime).toBe(LATER);
  });

  it('preserves other types in place and untouched', () => {
    const existing: Condition[] = [foreign, { ...foreign, type: 'Programmed', status: 'Unknown' }, { ...foreign, type: 'z' }];
    const out = upsertConditions(existing, [spec('True'), { ...spec('True'), type: 'Accepted' }], NOW);
    expect(out.map((c) => c.type)).toEqual(['example.com/Other', 'Programmed', 'z', 'Accepted']);
    expect(out[0]).toEqual(foreign);
    expect(out[2]).toEqual({ ...foreign, type: 'z' });
  });

  it('is idempotent and does not alias its input', () => {
    const existing = [structuredClone(foreign)];
    const once = upsertConditions(existing, [spec('True')], NOW);
    const twice = upsertConditions(once, [spec('True')], LATER);
    expect(twice).toEqual(once);
    expect(conditionsEqualIgnoringTime(once, twice)).toBe(true);
    expect(existing).toEqual([foreign]);
  });
});

describe('conditionsEqualIgnoringTime', () => {
  it('ignores lastTransitionTime only', () => {
    const a = upsertConditions([], [spec('True')], NOW);
    const b = upsertConditions([], [spec('True')], LATER);
    expect(conditionsEqualIgnoringTime(a, b)).toBe(true);
    expect(conditionsEqualIgnoringTime(a, upsertConditions([], [spec('True', 'x')], NOW))).toBe(false);
    expect(conditionsEqualIgnoringTime(a, upsertConditions([], [spec('True', 'm', 2)], NOW))).toBe(false);
    expect(conditionsEqualIgnoringTime(a, [])).toBe(false);
  });
});
