// A Gateway whose class is someone else's, or gone. The Gateway API lets a
// controller populate status only for the Gateways it is responsible for,
// so touch nothing, except to take back the two claims of ours that would
// now be false: the Accepted=True we wrote (status-decisions.ts,
// notOursAccepted), reset to the API's initial Unknown/Pending, and, with it,
// a GatewayConfigurationApplied=False/RolloutQueued we wrote, removed: it
// says a rollout waits for this controller's budget, and none will come
// (docs/operations.md "Rollout budget"). Programmed and the rest are left as
// they are: they describe the data plane, which is still there until the
// new owner acts.
import { CONDITION_APPLIED } from '../../../api/names.js';
import { ADDRESS_TYPE_IP } from './addresses.js';
import { conditionsEqualIgnoringTime, upsertConditions } from './conditions.js';
import { untouched } from './gateway-facts.js';
import type { SettledPlan } from './plan-types.js';
import type { Gateway } from '../../../api/schemas.js';
import { notOursAccepted, ROLLOUT_QUEUED } from './status-decisions.js';

export function planNotOurs(gateway: Gateway, controllerName: string, now: string): SettledPlan {
  const reset = notOursAccepted(gateway, controllerName);
  if (reset === null) return untouched('not-ours');
  const stored = gateway.status?.conditions ?? [];
  const queuedByUs = (c: (typeof stored)[number]): boolean => c.type === CONDITION_APPLIED && c.status === 'False' && c.reason === ROLLOUT_QUEUED;
  const conditions = upsertConditions(stored.filter((c) => !queuedByUs(c)), [reset], now);
  const addresses = (gateway.status?.addresses ?? []).map((a) => ({ type: a.type ?? ADDRESS_TYPE_IP, value: a.value }));
  return {
    deployment: { action: 'none' },
    status: { conditions, addresses },
    statusChanged: !conditionsEqualIgnoringTime(conditions, stored),
    events: [],
    outcome: 'not-ours',
  };
}
