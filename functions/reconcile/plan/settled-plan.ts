// Assembles a settled plan: the decided conditions merged into the stored
// ones (lastTransitionTime moves only with status), the addresses and the
// listener status, and whether any of it differs from what is stored.
import { addressesEqual } from './addresses.js';
import { conditionsEqualIgnoringTime, findCondition, upsertConditions, type ConditionSpec } from './conditions.js';
import { CONDITION_PROGRAMMED } from '../../../api/names.js';
import { listenerStatuses, listenersEqual, storedListeners } from './listener-status.js';
import type { GatewayFacts, PlannedEvent, SettledOutcome, SettledPlan } from './plan-types.js';
import { namespaceLabels } from './route-attachment.js';

export function settledPlan(
  facts: GatewayFacts,
  specs: ConditionSpec[],
  deployment: SettledPlan['deployment'],
  events: PlannedEvent[],
  outcome: SettledOutcome,
): SettledPlan {
  const conditions = upsertConditions(facts.stored, specs, facts.now);
  const storedAddresses = facts.gateway.status?.addresses ?? [];
  const listeners = listenerStatuses({
    gateway: facts.gateway,
    routes: facts.observed.routes,
    gatewayProgrammed: findCondition(conditions, CONDITION_PROGRAMMED)?.status,
    namespaces: namespaceLabels(facts.observed.namespaces),
    now: facts.now,
  });
  const statusChanged =
    !conditionsEqualIgnoringTime(conditions, facts.stored) ||
    !addressesEqual(facts.addresses, storedAddresses) ||
    !listenersEqual(listeners, storedListeners(facts.gateway));
  return { deployment, status: { conditions, addresses: facts.addresses, listeners }, statusChanged, events, outcome };
}
