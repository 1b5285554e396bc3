// Gateway conditions: the types this controller owns, and an idempotent upsert
// in the manner of apimachinery's meta.SetStatusCondition.
import type { Condition } from '../../../api/schemas.js';
import { CONDITION_MESSAGE_MAX_BYTES, truncateUtf8 } from './truncate-bytes.js';


export type ConditionStatus = Condition['status'];

export interface ConditionSpec {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration: number;
}

/**
 * A condition as this controller sets it: observed at `generation`, with the
 * message cut where it is made, so that comparing it with the stored one
 * compares like with like (API error texts can be long).
 */
export function conditionAt(generation: number, type: string, status: ConditionStatus, reason: string, message: string): ConditionSpec {
  return { type, status, reason, message: truncateUtf8(message, CONDITION_MESSAGE_MAX_BYTES), observedGeneration: generation };
}

export function findCondition(conditions: Condition[], type: string): Condition | undefined {
  return conditions.find((c) => c.type === type);
}

// Same status, reason, message and generation; the time is not compared.
export function sameCondition(a: ConditionSpec | Condition | undefined, b: ConditionSpec | Condition | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.observedGeneration === b.observedGeneration
  );
}

// Conditions of other types (other controllers', or ones we do not set this
// time) stay exactly where and as they are. A condition we set keeps its place
// in the list; new ones are appended in the order given, so the list order
// never depends on anything but the inputs. lastTransitionTime moves only when
// the status does.
export function upsertConditions(existing: Condition[], desired: ConditionSpec[], now: string): Condition[] {
  // Conditions are replaced whole, never changed in place: a shallow copy of the list is enough.
  const out = [...existing];
  for (const spec of desired) {
    const index = out.findIndex((c) => c.type === spec.type);
    const previous = index < 0 ? undefined : out[index];
    const condition: Condition = {
      type: spec.type,
      status: spec.status,
      observedGeneration: spec.observedGeneration,
      lastTransitionTime:
        previous !== undefined && previous.status === spec.status ? previous.lastTransitionTime : now,
      reason: spec.reason,
      message: spec.message,
    };
    if (index < 0) out.push(condition);
    else out[index] = condition;
  }
  return out;
}

export function conditionsEqualIgnoringTime(a: Condition[], b: Condition[]): boolean {
  return a.length === b.length && a.every((c, i) => sameCondition(c, b[i]));
}

/** A condition time: second precision, like every Kubernetes controller's metav1.Time. */
export function conditionTime(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}
