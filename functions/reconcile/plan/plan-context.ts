// What every branch of the planner decides from: the observed Gateway and the
// live Deployment, sorted into "whoever owns it" and "ours".
import { conditionAt, type ConditionSpec, type ConditionStatus } from './conditions.js';
import type { StatusAddress } from './addresses.js';
import type { Observed, Outcome, Plan } from './plan-types.js';
import type { Condition, Deployment, Gateway } from '../../../api/schemas.js';

export interface Context {
  observed: Observed;
  gateway: Gateway;
  generation: number;
  // namespace/name of the LB Deployment, for messages.
  ref: string;
  stored: Condition[];
  addresses: StatusAddress[];
  // The live Deployment whoever owns it, and the same only when it is ours.
  live: Deployment | null;
  ours: Deployment | null;
}

/** A condition of this Gateway's generation. */
export function condition(
  ctx: Context,
  type: string,
  status: ConditionStatus,
  reason: string,
  message: string,
): ConditionSpec {
  return conditionAt(ctx.generation, type, status, reason, message);
}

// A fresh object each time: callers may append to `events`.
export function nothing(outcome: Outcome): Plan {
  return { deployment: { action: 'none' }, status: null, statusChanged: false, events: [], outcome };
}
