// A Gateway whose class is someone else's, or gone. Touch nothing, except
// the Accepted=True we wrote (status-decisions.ts, notOursAccepted).
// Programmed and the rest are left as they are: they describe the data plane,
// which is still there until the new owner acts.
import { ADDRESS_TYPE_IP } from './addresses.js';
import { conditionsEqualIgnoringTime, upsertConditions } from './conditions.js';
import { untouched } from './gateway-facts.js';
import type { SettledPlan } from './plan-types.js';
import type { Gateway } from '../../../api/schemas.js';
import { notOursAccepted } from './status-decisions.js';

export function planNotOurs(gateway: Gateway, controllerName: string, now: string): SettledPlan {
  const reset = notOursAccepted(gateway, controllerName);
  if (reset === null) return untouched('not-ours');
  const stored = gateway.status?.conditions ?? [];
  const conditions = upsertConditions(stored, [reset], now);
  const addresses = (gateway.status?.addresses ?? []).map((a) => ({ type: a.type ?? ADDRESS_TYPE_IP, value: a.value }));
  return {
    deployment: { action: 'none' },
    status: { conditions, addresses },
    statusChanged: !conditionsEqualIgnoringTime(conditions, stored),
    events: [],
    outcome: 'not-ours',
  };
}
