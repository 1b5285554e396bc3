// A Gateway whose class is someone else's, or gone.
import { ADDRESS_TYPE_IP } from './addresses.js';
import { conditionsEqualIgnoringTime, findCondition, upsertConditions } from './conditions.js';
import { CONDITION_ACCEPTED } from '../../../api/names.js';
import { nothing } from './plan-context.js';
import type { Observed, Plan } from './plan-types.js';
import type { Gateway } from '../../../api/schemas.js';
import { acceptedMessage, MESSAGE_WAITING } from './status-decisions.js';

// The class is someone else's (or gone). Touch nothing, except that an
// Accepted=True we wrote would now be a lie: reset it to the Gateway API's
// initial Unknown/Pending. Programmed and the rest are left as they are: they
// describe the data plane, which is still there until the new owner acts.
export function planNotOurs(observed: Observed, gateway: Gateway): Plan {
  const stored = gateway.status?.conditions ?? [];
  const accepted = findCondition(stored, CONDITION_ACCEPTED);
  if (accepted?.status !== 'True' || accepted.message !== acceptedMessage(observed.settings.controllerName)) {
    return nothing('not-ours');
  }
  const conditions = upsertConditions(
    stored,
    [
      {
        type: CONDITION_ACCEPTED,
        status: 'Unknown',
        reason: 'Pending',
        message: MESSAGE_WAITING,
        observedGeneration: gateway.metadata.generation ?? 0,
      },
    ],
    observed.now,
  );
  const addresses = (gateway.status?.addresses ?? []).map((a) => ({ type: a.type ?? ADDRESS_TYPE_IP, value: a.value }));
  return {
    deployment: { action: 'none' },
    status: { conditions, addresses },
    statusChanged: !conditionsEqualIgnoringTime(conditions, stored),
    events: [],
    outcome: 'not-ours',
  };
}
