// Every condition the planner writes, and the words it uses in them: one
// function per branch of plan.ts (invalid, collision, accepted, not ours)
// gives that branch's conditions, built from the single-condition decisions
// below.
import { readAppliedState, sameConfiguration, sameState } from './applied-annotations.js';
import { findCondition, type ConditionSpec } from './conditions.js';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE, CONDITION_PROGRAMMED } from '../../../api/names.js';
import { condition } from './gateway-facts.js';
import type { AppliedState, GatewayFacts, PendingStatus, Queued, SlotHolder, WriteFailure } from './plan-types.js';
import { controllerOf } from './render-deployment.js';
import { GATEWAY_KIND } from '../../../api/names.js';
import type { Deployment, Gateway, GatewayConfiguration } from '../../../api/schemas.js';

export const MESSAGE_WAITING = 'Waiting for controller';

/** GatewayConfigurationApplied's reason for a pod-template change the rollout budget holds back (rollout-budget.ts). */
export const ROLLOUT_QUEUED = 'RolloutQueued';

// Also how a Gateway we accepted is recognised after its class changes (the
// Meridio-2 controller matches the same text).
export function acceptedMessage(controllerName: string): string {
  return `Gateway accepted by ${controllerName}`;
}

// Applied=True exactly when the live annotations record the current inputs
// (invariant §7.3); otherwise why not.
export function appliedCondition(
  ctx: GatewayFacts,
  configuration: GatewayConfiguration,
  current: AppliedState,
  appliedState: AppliedState | null,
  failure: WriteFailure | undefined,
): ConditionSpec {
  if (ctx.ours && sameState(appliedState, current)) {
    return condition(
      ctx,
      CONDITION_APPLIED,
      'True',
      'Applied',
      `Deployment ${ctx.ref} has GatewayConfiguration ${current.configurationName} generation ${current.configurationGeneration} applied (Gateway generation ${current.gatewayGeneration})`,
    );
  }
  const versus = `Deployment ${ctx.ref} has ${describeApplied(appliedState, configuration)} applied, latest is generation ${current.configurationGeneration}${
    sameConfiguration(appliedState, current) ? ' (the Gateway or the LB template changed since)' : ''
  }`;
  const exhausted = ctx.input.retriesExhausted;
  if (exhausted !== undefined) {
    const last = failure ? `; last error: ${errorText(failure)}` : '';
    return condition(
      ctx,
      CONDITION_APPLIED,
      'False',
      'RetriesExhausted',
      `${versus}; delivery retries were exhausted: ${exhausted.message}${last}`,
    );
  }
  if (failure) return condition(ctx, CONDITION_APPLIED, 'False', 'ApplyFailed', `${versus}: ${errorText(failure)}`);
  // Written successfully, yet the result does not record the inputs (e.g. a
  // mutating webhook removed the annotations): not applied, as far as we know.
  return condition(
    ctx,
    CONDITION_APPLIED,
    'False',
    'ApplyFailed',
    `${versus}: the written Deployment does not record the current inputs`,
  );
}

/** At most this many names in a message; the count says how many there are. */
const NAMED_MAX = 3;
const named = (refs: string[]): string => (refs.length <= NAMED_MAX ? refs.join(', ') : `${refs.slice(0, NAMED_MAX).join(', ')}, ...`);

const SLOT_STATE_TEXT: Record<SlotHolder['state'], string> = { rolling: 'rolling', stuck: 'stuck: progress deadline exceeded' };

// A pod-template change the rollout budget holds back: not applied, and the
// message says what is ahead of it: each slot and what holds it, and the
// Gateways queued before it. Programmed is untouched: the Deployment still
// serves what it has.
function queuedCondition(ctx: GatewayFacts, pending: PendingStatus, queued: Queued): ConditionSpec {
  const n = queued.held.length;
  const holders = queued.held.map((h) => `${h.ref}: ${SLOT_STATE_TEXT[h.state]}`);
  const shown = n <= NAMED_MAX ? holders.join('; ') : `${holders.slice(0, NAMED_MAX).join('; ')}; ...`;
  const rolling = n === 0 ? 'no slot held' : `${n} slot${n === 1 ? '' : 's'} held (${shown})`;
  const ahead = queued.ahead.length === 0 ? 'no Gateway queued before it' : `${queued.ahead.length} Gateway${queued.ahead.length === 1 ? '' : 's'} queued before it (${named(queued.ahead)})`;
  return condition(
    ctx,
    CONDITION_APPLIED,
    'False',
    ROLLOUT_QUEUED,
    `Deployment ${ctx.ref} has ${describeApplied(readAppliedState(ctx.ours), pending.configuration)} applied, latest is generation ${pending.current.configurationGeneration}; its rollout waits for the rollout budget (${queued.budget} at once): ${rolling}, ${ahead}`,
  );
}

export function lbAvailable(ctx: GatewayFacts): ConditionSpec {
  const status = ctx.ours?.status;
  if (!ctx.ours || status?.observedGeneration === undefined) {
    return condition(
      ctx,
      CONDITION_LB_AVAILABLE,
      'Unknown',
      'Pending',
      ctx.ours ? 'No Deployment status observed yet' : 'No LB Deployment controlled by this Gateway',
    );
  }
  const desired = ctx.ours.spec.replicas ?? 1;
  const available = status.availableReplicas ?? 0;
  const message = `${available}/${desired} LB replicas available`;
  return available > 0
    ? condition(ctx, CONDITION_LB_AVAILABLE, 'True', 'Available', message)
    : condition(ctx, CONDITION_LB_AVAILABLE, 'False', 'NoAvailableReplicas', message);
}

export function acceptedTrue(ctx: GatewayFacts): ConditionSpec {
  return condition(ctx, CONDITION_ACCEPTED, 'True', 'Accepted', acceptedMessage(ctx.input.settings.controllerName));
}

export function programmedTrue(ctx: GatewayFacts, ours: Deployment): ConditionSpec {
  return condition(
    ctx,
    CONDITION_PROGRAMMED,
    'True',
    'Programmed',
    `Deployment ${ctx.ref} is programmed with ${describeApplied(readAppliedState(ours), null)} (Pods may still be initializing)`,
  );
}

export function describeApplied(state: AppliedState | null, latest: GatewayConfiguration | null): string {
  if (state === null) return 'no recorded GatewayConfiguration';
  const replaced =
    latest !== null &&
    state.configurationName === latest.metadata.name &&
    state.configurationUid !== (latest.metadata.uid ?? '')
      ? ` (uid ${state.configurationUid}, since deleted and re-created)`
      : '';
  return `GatewayConfiguration ${state.configurationName} generation ${state.configurationGeneration}${replaced}`;
}

export function describeController(ctx: GatewayFacts, live: Deployment): string {
  const controller = controllerOf(live);
  if (controller === undefined) return 'no controller';
  const sameName = controller.kind === GATEWAY_KIND && controller.name === ctx.gateway.metadata.name;
  return `${controller.kind}/${controller.name}${sameName ? ` (uid ${controller.uid})` : ''}`;
}

export function collisionMessage(ctx: GatewayFacts, live: Deployment): string {
  return `Deployment ${ctx.ref} exists but is not controlled by this Gateway (controller: ${describeController(ctx, live)}); it is not adopted or changed`;
}

export function errorText(failure: WriteFailure): string {
  return failure.code === undefined ? failure.message : `${failure.message} (HTTP ${failure.code})`;
}

// Invalid parameters. Programmed follows what is actually serving: if a
// Deployment of ours exists, the previous (valid) configuration is still in
// place and handling traffic, so Programmed stays True and names the
// generation it runs: flipping it to False would report an outage that is not
// happening (docs/design.md §1), and Accepted already says the new parameters
// were refused. With no Deployment of ours, nothing is programmed:
// False/Invalid, the Gateway API reason for a Gateway that is semantically
// invalid. Applied is Unknown/Pending (docs/design.md §5: nothing to apply
// while not accepted).
export function invalidConditions(ctx: GatewayFacts, message: string): { accepted: ConditionSpec; programmed: ConditionSpec; all: ConditionSpec[] } {
  const accepted = condition(ctx, CONDITION_ACCEPTED, 'False', 'InvalidParameters', message);
  const programmed = ctx.ours
    ? programmedTrue(ctx, ctx.ours)
    : ctx.live
      ? condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', collisionMessage(ctx, ctx.live))
      : condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', 'No LB Deployment is programmed: the Gateway is not accepted (see the Accepted condition)');
  const keeps = ctx.ours ? `; Deployment ${ctx.ref} keeps ${describeApplied(readAppliedState(ctx.ours), null)}` : '';
  const applied = condition(ctx, CONDITION_APPLIED, 'Unknown', 'Pending', `Nothing to apply while the Gateway is not accepted${keeps}`);
  return { accepted, programmed, all: [accepted, programmed, applied, lbAvailable(ctx)] };
}

// A Deployment of our name that another controller owns: not applied, and no
// write will change that: False, with the reason.
export function collisionConditions(ctx: GatewayFacts, configuration: GatewayConfiguration): { programmed: ConditionSpec; all: ConditionSpec[] } {
  const live = ctx.live as Deployment;
  const programmed = condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', collisionMessage(ctx, live));
  const applied = condition(
    ctx,
    CONDITION_APPLIED,
    'False',
    'ApplyFailed',
    `GatewayConfiguration ${configuration.metadata.name} generation ${configuration.metadata.generation ?? 0} is not applied: Deployment ${ctx.ref} is controlled by ${describeController(ctx, live)}, not by this Gateway; nothing was written`,
  );
  const lb = condition(ctx, CONDITION_LB_AVAILABLE, 'Unknown', 'Pending', 'No LB Deployment controlled by this Gateway');
  return { programmed, all: [acceptedTrue(ctx), programmed, applied, lb] };
}

// Accepted, after the write (if any). With a Deployment of ours in place,
// Programmed is True whatever happened to this write: the Deployment serves
// traffic, and Applied carries the failure. Without one, only a permanent
// failure (a refused create) makes it False; transient and persistent
// failures leave it exactly as stored.
export function acceptedConditions(pending: PendingStatus, write: { failure: WriteFailure | undefined; queued?: Queued }): { applied: ConditionSpec; all: ConditionSpec[] } {
  const ctx = pending.facts;
  const { failure } = write;
  const programmed: ConditionSpec | null = ctx.ours
    ? programmedTrue(ctx, ctx.ours)
    : failure?.class === 'permanent'
      ? condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', `Deployment ${ctx.ref} could not be created: ${errorText(failure)}`)
      : findCondition(ctx.stored, CONDITION_PROGRAMMED)
        ? null
        : condition(ctx, CONDITION_PROGRAMMED, 'Unknown', 'Pending', MESSAGE_WAITING);
  const applied = write.queued
    ? queuedCondition(ctx, pending, write.queued)
    : appliedCondition(ctx, pending.configuration, pending.current, readAppliedState(ctx.ours), failure);
  return { applied, all: [acceptedTrue(ctx), ...(programmed ? [programmed] : []), applied, lbAvailable(ctx)] };
}

// The class is someone else's (or gone). An Accepted=True we wrote would now
// be a lie: reset it to the Gateway API's initial Unknown/Pending. Null: there
// is nothing of ours to take back. (A RolloutQueued we wrote goes with it:
// not-ours.ts.)
export function notOursAccepted(gateway: Gateway, controllerName: string): ConditionSpec | null {
  const accepted = findCondition(gateway.status?.conditions ?? [], CONDITION_ACCEPTED);
  if (accepted?.status !== 'True' || accepted.message !== acceptedMessage(controllerName)) return null;
  return { type: CONDITION_ACCEPTED, status: 'Unknown', reason: 'Pending', message: MESSAGE_WAITING, observedGeneration: gateway.metadata.generation ?? 0 };
}
