// The facts every branch of the planner decides from, gathered once per plan:
// the Gateway, its stored conditions and addresses, and its live Deployment
// sorted into "whoever owns it" and "ours".
import { conditionAt, type ConditionSpec, type ConditionStatus } from './conditions.js';
import { gatewayAddresses } from './addresses.js';
import { deploymentName } from './names.js';
import type { GatewayFacts, Observed, PlanInput, SettledOutcome, SettledPlan } from './plan-types.js';
import { isControlledBy } from './render-deployment.js';
import { namespaceLabels } from './route-attachment.js';
import type { Gateway } from '../../../api/schemas.js';

export function gatewayFacts(observed: Observed, input: PlanInput, now: string, gateway: Gateway): GatewayFacts {
  const namespace = gateway.metadata.namespace ?? observed.key.namespace;
  const live = observed.deployment;
  return {
    observed,
    input,
    now,
    gateway,
    generation: gateway.metadata.generation ?? 0,
    ref: `${namespace}/${deploymentName(gateway.metadata.name)}`,
    stored: gateway.status?.conditions ?? [],
    addresses: gatewayAddresses(gateway, observed.routes, namespaceLabels(observed.namespaces)),
    live,
    ours: live !== null && isControlledBy(live, gateway) ? live : null,
  };
}

/** A condition of this Gateway's generation. */
export function condition(facts: GatewayFacts, type: string, status: ConditionStatus, reason: string, message: string): ConditionSpec {
  return conditionAt(facts.generation, type, status, reason, message);
}

/** A plan that writes nothing at all. A fresh object each time: callers may append to `events`. */
export function untouched(outcome: SettledOutcome): SettledPlan {
  return { deployment: { action: 'none' }, status: null, statusChanged: false, events: [], outcome };
}
