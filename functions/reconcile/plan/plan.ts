// The pure planner: observed objects, the input (template, settings) and the
// clock in; the Deployment write, the Gateway status and the Events out. No
// I/O, no randomness: the same arguments always give a deep-equal Plan.
//
// One pass per attempt: plan() chooses the branch and, when the Deployment
// must be written, returns the write with what status will need (`pending`);
// the shell writes once and calls planStatus() with the outcome. Status is
// decided exactly once, from what the write actually did.
import { currentState, readAppliedState } from './applied-annotations.js';
import { admissionChange } from './admission-record.js';
import { deploymentAction } from './deployment-action.js';
import { gatewayFacts, untouched } from './gateway-facts.js';
import { planNotOurs } from './not-ours.js';
import type { ConfigurationLine, DeploymentWrite, GatewayFacts, Observed, PendingStatus, Planned, PlanInput, SettledPlan, WriteOutcome } from './plan-types.js';
import { collisionEvent, invalidEvents, newVerdict, writeEvents } from './planned-events.js';
import { isControlledBy, renderDeployment } from './render-deployment.js';
import { changesPodTemplate, holdsSlot, rolloutBudget, wasInLine } from './rollout-budget.js';
import { renderedProblem } from './rendered-checks.js';
import { settledPlan } from './settled-plan.js';
import { acceptedConditions, collisionConditions, invalidConditions } from './status-decisions.js';
import { validateParameters } from './validate-configuration.js';
import type { Deployment, Gateway, GatewayConfiguration } from '../../../api/schemas.js';
import { configurationLabels, desiredIndex, hasLabels, indexRecord, ROLLING, rolloutIndexKey, withLabels } from './rollout-index.js';

export function plan(observed: Observed, input: PlanInput, now: string): Planned {
  const { gateway } = observed;
  // Deleted, or being deleted: the garbage collector removes the Deployment.
  // (Dispatch wakes the next in line on its event: dispatch.ts.)
  if (gateway === null) return untouched('not-found');
  if (gateway.metadata.deletionTimestamp !== undefined) return withoutIndex(untouched('not-found'), ours(observed, gateway), input);
  const inLine = budgetOn(input) && wasInLine(gateway, ours(observed, gateway), { templateHash: input.template.hash, configuration: observed.gatewayConfiguration }, input.settings.controllerName);
  if (!classIsOurs(observed, input, gateway)) {
    // Out of our line, and its Deployment no longer holds a slot of ours.
    const notOurs = withoutIndex(planNotOurs(gateway, input.settings.controllerName, now), ours(observed, gateway), input);
    return notOurs.statusChanged && budgetOn(input) && (inLine || holdsSlot(ours(observed, gateway))) ? { ...notOurs, wakeNext: true } : notOurs;
  }

  const facts = gatewayFacts(observed, input, now, gateway);
  const validation = validateParameters(gateway, observed.gatewayConfiguration, input.template.deployment, observed.gatewayClass);
  // Not accepted, or its Deployment someone else's: out of the line.
  if (!validation.ok) return leavesLine(withoutIndex(planInvalid(facts, validation.message), facts.ours, input, { keepSlot: true }), inLine);
  if (facts.live !== null && facts.ours === null) return leavesLine(planCollision(facts, validation.configuration), inLine);
  return planAccepted(facts, validation.configuration, inLine);
}

const budgetOn = (input: PlanInput): boolean => (input.settings.rolloutBudget ?? 0) > 0;

/**
 * Our rollout index label taken off the Deployment of a Gateway that is out
 * of the line: another class, being deleted (and its slot with it), or
 * invalid (`keepSlot`: a rollout it started still rolls, and counts, until
 * it ends). This is what takes it out at once.
 */
function withoutIndex(settled: SettledPlan, deployment: Deployment | null, input: PlanInput, o: { keepSlot?: boolean } = {}): SettledPlan {
  if (deployment === null || settled.deployment.action !== 'none') return settled;
  const { controllerName } = input.settings;
  const value = o.keepSlot === true && budgetOn(input) && holdsSlot(deployment) ? ROLLING : null;
  const record = indexRecord(deployment, { [rolloutIndexKey(controllerName)]: value, ...configurationLabels(deployment, controllerName, false) });
  return record === null ? settled : { ...settled, deployment: record };
}

/** The rollout index labels a Deployment of an accepted Gateway of ours should carry (rollout-index.ts); none without a budget. */
function indexFor(d: Deployment, input: PlanInput, o: { startsRollout: boolean; holdsSlot: boolean; queued: boolean }): Record<string, string | null> {
  const { controllerName } = input.settings;
  const on = budgetOn(input);
  const key = rolloutIndexKey(controllerName);
  return { [key]: on ? desiredIndex(d, { ...o, key, templateHash: input.template.hash }) : null, ...configurationLabels(d, controllerName, on) };
}

/** The write with the index labels it should carry. */
function indexedWrite(write: DeploymentWrite, facts: GatewayFacts): DeploymentWrite {
  const startsRollout = write.action === 'create' || (facts.ours !== null && changesPodTemplate(facts.ours, write.object));
  const labels = indexFor(write.object, facts.input, { startsRollout, holdsSlot: holdsSlot(facts.ours), queued: false });
  return hasLabels(write.object, labels) ? write : { ...write, object: withLabels(write.object, labels) };
}

/** The index patch a Deployment needs when nothing else is written to it. */
function indexAction(facts: GatewayFacts, queued: boolean): SettledPlan['deployment'] {
  const live = facts.ours;
  if (live === null) return { action: 'none' };
  return indexRecord(live, indexFor(live, facts.input, { startsRollout: false, holdsSlot: holdsSlot(live), queued })) ?? { action: 'none' };
}

const ours = (observed: Observed, gateway: Gateway) => (observed.deployment !== null && isControlledBy(observed.deployment, gateway) ? observed.deployment : null);

/** A Gateway that was in the rollout line and is not after this plan: the shell wakes the next (rollout-budget.ts). */
function leavesLine(settled: SettledPlan, inLine: boolean): SettledPlan {
  return inLine && settled.outcome !== 'rollout-queued' && settled.outcome !== 'write-failed' ? { ...settled, wakeNext: true } : settled;
}

/** Status and Events once the Deployment write that plan() asked for has been made. */
export function planStatus(pending: PendingStatus, outcome: WriteOutcome): SettledPlan {
  if (!outcome.ok) return acceptedPlan(pending, { action: 'none' }, { failure: outcome.failure, written: false, admittedPaths: null });
  // The written object is what is live now.
  const { observed, input, now, gateway } = pending.facts;
  const facts = gatewayFacts({ ...observed, deployment: outcome.written }, input, now, gateway);
  const admitted = facts.ours ? admissionChange(pending.rendered, facts.ours, pending.enforceReplicas) : null;
  const action = admitted ? { action: 'record-admission' as const, name: pending.rendered.metadata.name, annotations: admitted.annotations } : { action: 'none' as const };
  const settled = acceptedPlan({ ...pending, facts }, action, { failure: undefined, written: true, admittedPaths: admitted?.paths ?? null });
  // A write that starts no rollout (the Gateway no longer needs one, or only
  // the Deployment's metadata or replicas moved) takes it out of the line.
  const startedRollout = pending.before === null || changesPodTemplate(pending.before, outcome.written);
  return leavesLine(settled, pending.wasInLine && !startedRollout);
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

function planAccepted(facts: GatewayFacts, configuration: GatewayConfiguration, inLine: boolean): Planned {
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
    wasInLine: inLine,
  };
  const write = deploymentAction(facts, pending.rendered, pending.current, pending.enforceReplicas);
  // In sync: a Gateway queued for a change that is no longer due leaves the line.
  if (write === null) return leavesLine(acceptedPlan(pending, indexAction(facts, false), { failure: undefined, written: false, admittedPaths: null }), inLine);
  const budget = input.settings.rolloutBudget ?? 0;
  // Creates and changes that leave the pod template alone never wait.
  if (budget > 0 && write.action === 'update' && facts.ours !== null && changesPodTemplate(facts.ours, write.object)) {
    const census = facts.observed.rollouts;
    if (census === undefined) return { outcome: 'needs-reads', reads: 'rollout-census', ...configurationLineOf(facts.ours, configuration) };
    const verdict = rolloutBudget(gateway, budget, census, { templateHash: input.template.hash, configuration }, input.settings.controllerName);
    if (!verdict.go) return acceptedPlan(pending, indexAction(facts, true), { failure: undefined, written: false, admittedPaths: null, queued: { ...verdict, budget } });
  }
  return { outcome: 'needs-write', deployment: indexedWrite(write, facts), pending };
}

/** Its own Deployment renders an older generation of this very configuration: the others behind the same edit are in line too. */
function configurationLineOf(ours: Deployment, configuration: GatewayConfiguration): { configurationLine?: ConfigurationLine } {
  const applied = readAppliedState(ours);
  const { uid, generation } = configuration.metadata;
  if (applied === null || uid === undefined || applied.configurationUid !== uid || applied.configurationGeneration >= (generation ?? 0)) return {};
  return { configurationLine: { uid, generation: generation ?? 0 } };
}

function acceptedPlan(pending: PendingStatus, action: SettledPlan['deployment'], write: Parameters<typeof acceptedConditions>[1] & { written: boolean; admittedPaths: string[] | null }): SettledPlan {
  const { facts } = pending;
  const conditions = acceptedConditions(pending, write);
  const events = writeEvents(facts, { before: pending.before, written: write.written, admittedPaths: write.admittedPaths, applied: conditions.applied, failure: write.failure });
  const outcome = write.failure !== undefined ? 'write-failed' : write.written ? 'applied' : write.queued !== undefined ? 'rollout-queued' : 'in-sync';
  return settledPlan(facts, conditions.all, action, events, outcome);
}
