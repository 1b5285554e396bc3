// The conditions the planner writes and the words it uses in them. Each
// function decides one condition (or one message) from the Context; the
// branches in plan.ts choose which apply.
import { addressesEqual } from './addresses.js';
import { readAppliedState, sameConfiguration, sameState, type AppliedState } from './applied-annotations.js';
import { conditionsEqualIgnoringTime, findCondition, upsertConditions, type ConditionSpec } from './conditions.js';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE, CONDITION_PROGRAMMED } from '../../../api/names.js';
import { listenerStatuses, listenersEqual, storedListeners } from './listener-status.js';
import { condition, type Context } from './plan-context.js';
import type { DeploymentAction, Outcome, Plan, PlannedEvent, WriteFailure } from './plan-types.js';
import { controllerOf, GATEWAY_KIND } from './render-deployment.js';
import { namespaceLabels } from './route-attachment.js';
import type { Deployment, GatewayConfiguration } from '../../../api/schemas.js';

export const MESSAGE_WAITING = 'Waiting for controller';

// Also how a Gateway we accepted is recognised after its class changes (the
// Meridio-2 controller matches the same text).
export function acceptedMessage(controllerName: string): string {
  return `Gateway accepted by ${controllerName}`;
}

// Applied=True exactly when the live annotations record the current inputs
// (invariant §7.3); otherwise why not.
export function appliedCondition(
  ctx: Context,
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
  const exhausted = ctx.observed.retriesExhausted;
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

export function lbAvailable(ctx: Context): ConditionSpec {
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

export function acceptedTrue(ctx: Context): ConditionSpec {
  return condition(ctx, CONDITION_ACCEPTED, 'True', 'Accepted', acceptedMessage(ctx.observed.settings.controllerName));
}

export function programmedTrue(ctx: Context, ours: Deployment): ConditionSpec {
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

export function describeController(ctx: Context, live: Deployment): string {
  const controller = controllerOf(live);
  if (controller === undefined) return 'no controller';
  const sameName = controller.kind === GATEWAY_KIND && controller.name === ctx.gateway.metadata.name;
  return `${controller.kind}/${controller.name}${sameName ? ` (uid ${controller.uid})` : ''}`;
}

export function collisionMessage(ctx: Context, live: Deployment): string {
  return `Deployment ${ctx.ref} exists but is not controlled by this Gateway (controller: ${describeController(ctx, live)}); it is not adopted or changed`;
}

export function errorText(failure: WriteFailure): string {
  return failure.code === undefined ? failure.message : `${failure.message} (HTTP ${failure.code})`;
}

export function finish(
  ctx: Context,
  specs: ConditionSpec[],
  deployment: DeploymentAction,
  events: PlannedEvent[],
  outcome: Outcome,
): Plan {
  const conditions = upsertConditions(ctx.stored, specs, ctx.observed.now);
  const storedAddresses = ctx.gateway.status?.addresses ?? [];
  const listeners = listenerStatuses({
    gateway: ctx.gateway,
    routes: ctx.observed.routes,
    gatewayProgrammed: findCondition(conditions, CONDITION_PROGRAMMED)?.status,
    namespaces: namespaceLabels(ctx.observed.namespaces),
    now: ctx.observed.now,
  });
  const statusChanged =
    !conditionsEqualIgnoringTime(conditions, ctx.stored) ||
    !addressesEqual(ctx.addresses, storedAddresses) ||
    !listenersEqual(listeners, storedListeners(ctx.gateway));
  return { deployment, status: { conditions, addresses: ctx.addresses, listeners }, statusChanged, events, outcome };
}
