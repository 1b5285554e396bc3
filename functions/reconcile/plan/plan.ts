// The pure planner: observed objects, the input (template, settings) and the
// clock in; the Deployment write, the Gateway status and the Events out. No
// I/O, no randomness: the same arguments always give a deep-equal Plan.
//
// One pass per attempt: plan() chooses the branch and, when the Deployment
// must be written, returns the write with what status will need (`pending`);
// the shell writes once and calls planStatus() with the outcome. Status is
// decided exactly once, from what the write actually did.
import { currentState } from './applied-annotations.js';
import { admissionChange } from './admission-record.js';
import { deploymentAction } from './deployment-action.js';
import { gatewayFacts, untouched } from './gateway-facts.js';
import { planNotOurs } from './not-ours.js';
import type { GatewayFacts, Observed, PendingStatus, Planned, PlanInput, SettledPlan, WriteOutcome } from './plan-types.js';
import { collisionEvent, invalidEvents, newVerdict, writeEvents } from './planned-events.js';
import { renderDeployment } from './render-deployment.js';
import { changesPodTemplate, rolloutBudget } from './rollout-budget.js';
import { renderedProblem } from './rendered-checks.js';
import { settledPlan } from './settled-plan.js';
import { acceptedConditions, collisionConditions, invalidConditions } from './status-decisions.js';
import { validateParameters } from './validate-configuration.js';
import type { Gateway, GatewayConfiguration } from '../../../api/schemas.js';

export function plan(observed: Observed, input: PlanInput, now: string): Planned {
  const { gateway } = observed;
  // Deleted, or being deleted: the garbage collector removes the Deployment.
  if (gateway === null || gateway.metadata.deletionTimestamp !== undefined) return untouched('not-found');
  if (!classIsOurs(observed, input, gateway)) return planNotOurs(gateway, input.settings.controllerName, now);

  const facts = gatewayFacts(observed, input, now, gateway);
  const validation = validateParameters(gateway, observed.gatewayConfiguration, input.template.deployment, observed.gatewayClass);
  if (!validation.ok) return planInvalid(facts, validation.message);
  if (facts.live !== null && facts.ours === null) return planCollision(facts, validation.configuration);
  return planAccepted(facts, validation.configuration);
}

/** Status and Events once the Deployment write that plan() asked for has been made. */
export function planStatus(pending: PendingStatus, outcome: WriteOutcome): SettledPlan {
  if (!outcome.ok) return acceptedPlan(pending, { action: 'none' }, { failure: outcome.failure, written: false, admittedPaths: null });
  // The written object is what is live now.
  const { observed, input, now, gateway } = pending.facts;
  const facts = gatewayFacts({ ...observed, deployment: outcome.written }, input, now, gateway);
  const admitted = facts.ours ? admissionChange(pending.rendered, facts.ours, pending.enforceReplicas) : null;
  const action = admitted ? { action: 'record-admission' as const, name: pending.rendered.metadata.name, annotations: admitted.annotations } : { action: 'none' as const };
  return acceptedPlan({ ...pending, facts }, action, { failure: undefined, written: true, admittedPaths: admitted?.paths ?? null });
}

function classIsOurs(observed: Observed, input: PlanInput, gateway: Gateway): boolean {
  const gatewayClass = observed.gatewayClass;
  return (
    gatewayClass !== null &&
    gatewayClass.metadata.name === gateway.spec.gatewayClassName &&
    gatewayClass.spec.controllerName === input.settings.controllerName
  );
}

// Invalid parameters: Accepted=False and nothing is written to the Deployment
// (status-decisions.ts says why Programmed stays True when ours serves).
function planInvalid(facts: GatewayFacts, message: string): SettledPlan {
  const conditions = invalidConditions(facts, message);
  return settledPlan(facts, conditions.all, { action: 'none' }, invalidEvents(facts, conditions, message), 'invalid');
}

// A Deployment with our name that this Gateway does not control is never
// adopted or changed (it may belong to a Gateway re-created under the same
// name, or to someone else entirely).
function planCollision(facts: GatewayFacts, configuration: GatewayConfiguration): SettledPlan {
  const conditions = collisionConditions(facts, configuration);
  const events = newVerdict(facts, conditions.programmed) ? [collisionEvent(conditions.programmed)] : [];
  return settledPlan(facts, conditions.all, { action: 'none' }, events, 'collision');
}

function planAccepted(facts: GatewayFacts, configuration: GatewayConfiguration): Planned {
  const { gateway, input } = facts;
  const rendered = renderDeployment({
    template: input.template.deployment,
    templateHash: input.template.hash,
    gateway,
    configuration,
    settings: input.settings,
    live: facts.ours,
  });
  // Validation checks everything rendering can refuse; kept for safety.
  if (!rendered.ok) return planInvalid(facts, rendered.error);
  const unwritable = renderedProblem(rendered.deployment);
  if (unwritable !== null) return planInvalid(facts, unwritable);

  const pending: PendingStatus = {
    facts,
    configuration,
    rendered: rendered.deployment,
    current: currentState(gateway, configuration, input.template.hash),
    enforceReplicas: configuration.spec.horizontalScaling.enforceReplicas,
    before: facts.ours,
  };
  const write = deploymentAction(facts, pending.rendered, pending.current, pending.enforceReplicas);
  if (write === null) return acceptedPlan(pending, { action: 'none' }, { failure: undefined, written: false, admittedPaths: null });
  const budget = input.settings.rolloutBudget ?? 0;
  // Creates and changes that leave the pod template alone never wait.
  if (budget > 0 && write.action === 'update' && facts.ours !== null && changesPodTemplate(facts.ours, write.object)) {
    const census = facts.observed.rollouts;
    if (census === undefined) return { outcome: 'needs-reads', reads: 'rollout-census' };
    const verdict = rolloutBudget(gateway, budget, census, { templateHash: input.template.hash, configuration });
    if (!verdict.go) return acceptedPlan(pending, { action: 'none' }, { failure: undefined, written: false, admittedPaths: null, queued: { ...verdict, budget } });
  }
  return { outcome: 'needs-write', deployment: write, pending };
}

function acceptedPlan(pending: PendingStatus, action: SettledPlan['deployment'], write: Parameters<typeof acceptedConditions>[1] & { written: boolean; admittedPaths: string[] | null }): SettledPlan {
  const { facts } = pending;
  const conditions = acceptedConditions(pending, write);
  const events = writeEvents(facts, { before: pending.before, written: write.written, admittedPaths: write.admittedPaths, applied: conditions.applied, failure: write.failure });
  const outcome = write.failure !== undefined ? 'write-failed' : write.written ? 'applied' : write.queued !== undefined ? 'rollout-queued' : 'in-sync';
  return settledPlan(facts, conditions.all, action, events, outcome);
}
