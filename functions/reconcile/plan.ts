// The pure planner: observed objects in; the Deployment write, the Gateway
// status and the Events out. No I/O, no clock (`now` is an input), no
// randomness: the same Observed always gives a deep-equal Plan.
//
// The I/O layer plans once; if the plan asks for a Deployment write it writes
// and plans again with the result (`write`), then writes the status when
// `statusChanged` and emits `events`. The first plan of a write therefore
// carries no status: the second one, which knows how the write went, decides.
import { addressesEqual, gatewayAddresses, ADDRESS_TYPE_IP, type StatusAddress } from './addresses.js';
import {
  currentState,
  readAppliedState,
  sameConfiguration,
  sameState,
  type AppliedState,
} from './applied-annotations.js';
import {
  CONDITION_ACCEPTED,
  CONDITION_APPLIED,
  CONDITION_LB_AVAILABLE,
  CONDITION_PROGRAMMED,
  conditionAt,
  conditionsEqualIgnoringTime,
  findCondition,
  upsertConditions,
  type ConditionSpec,
  type ConditionStatus,
} from './conditions.js';
import { admissionChange, admissionExplains } from './admission-record.js';
import { needsWrite, overlayManaged } from './deployment-diff.js';
import { listenerStatuses, listenersEqual, storedListeners } from './listener-status.js';
import type { DeploymentAction, Observed, Outcome, Plan, PlannedEvent, WriteFailure } from './plan-types.js';
import {
  controllerOf,
  deploymentName,
  isControlledBy,
  renderDeployment,
  GATEWAY_KIND,
} from './render-deployment.js';
import type { Condition, Deployment, Gateway, GatewayConfiguration } from './schemas.js';
import { renderedProblem } from './rendered-checks.js';
import { namespaceLabels } from './route-attachment.js';
import { validateParameters } from './validate-configuration.js';

export type { Observed, Plan } from './plan-types.js';

export const MESSAGE_WAITING = 'Waiting for controller';

// Also how a Gateway we accepted is recognised after its class changes (the
// Meridio-2 controller matches the same text).
export function acceptedMessage(controllerName: string): string {
  return `Gateway accepted by ${controllerName}`;
}

interface Context {
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

// A fresh object each time: callers may append to `events`.
function nothing(outcome: Outcome): Plan {
  return { deployment: { action: 'none' }, status: null, statusChanged: false, events: [], outcome };
}

export function plan(observed: Observed): Plan {
  const { gateway } = observed;
  // Deleted, or being deleted: the garbage collector removes the Deployment.
  if (gateway === null || gateway.metadata.deletionTimestamp !== undefined) return nothing('not-found');
  if (!classIsOurs(observed, gateway)) return planNotOurs(observed, gateway);

  const namespace = gateway.metadata.namespace ?? observed.key.namespace;
  const live = observed.deployment;
  const ctx: Context = {
    observed,
    gateway,
    generation: gateway.metadata.generation ?? 0,
    ref: `${namespace}/${deploymentName(gateway.metadata.name)}`,
    stored: gateway.status?.conditions ?? [],
    addresses: gatewayAddresses(gateway, observed.routes, namespaceLabels(observed.namespaces)),
    live,
    ours: live !== null && isControlledBy(live, gateway) ? live : null,
  };

  const validation = validateParameters(gateway, observed.gatewayConfiguration, observed.template.deployment, observed.gatewayClass);
  if (!validation.ok) return planInvalid(ctx, validation.message);
  if (ctx.live !== null && ctx.ours === null) return planCollision(ctx, validation.configuration);
  return planAccepted(ctx, validation.configuration);
}

function classIsOurs(observed: Observed, gateway: Gateway): boolean {
  const gatewayClass = observed.gatewayClass;
  return (
    gatewayClass !== null &&
    gatewayClass.metadata.name === gateway.spec.gatewayClassName &&
    gatewayClass.spec.controllerName === observed.settings.controllerName
  );
}

// The class is someone else's (or gone). Touch nothing, except that an
// Accepted=True we wrote would now be a lie: reset it to the Gateway API's
// initial Unknown/Pending. Programmed and the rest are left as they are: they
// describe the data plane, which is still there until the new owner acts.
function planNotOurs(observed: Observed, gateway: Gateway): Plan {
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

// Invalid parameters: Accepted=False and nothing is written to the Deployment.
//
// Programmed follows what is actually serving. If a Deployment of ours exists,
// the previous (valid) configuration is still in place and handling traffic,
// so Programmed stays True and names the generation it runs: flipping it to
// False would report an outage that is not happening (docs/design.md §1), and Accepted
// already says the new parameters were refused. With no Deployment of ours,
// nothing is programmed: False/Invalid, the Gateway API reason for a Gateway
// that is semantically invalid. Applied is Unknown/Pending (docs/design.md §5: nothing
// to apply while not accepted).
function planInvalid(ctx: Context, message: string): Plan {
  const accepted = condition(ctx, CONDITION_ACCEPTED, 'False', 'InvalidParameters', message);
  const programmed = ctx.ours
    ? programmedTrue(ctx, ctx.ours)
    : ctx.live
      ? condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', collisionMessage(ctx, ctx.live))
      : condition(
          ctx,
          CONDITION_PROGRAMMED,
          'False',
          'Invalid',
          'No LB Deployment is programmed: the Gateway is not accepted (see the Accepted condition)',
        );
  const keeps = ctx.ours ? `; Deployment ${ctx.ref} keeps ${describeApplied(readAppliedState(ctx.ours), null)}` : '';
  const applied = condition(
    ctx,
    CONDITION_APPLIED,
    'Unknown',
    'Pending',
    `Nothing to apply while the Gateway is not accepted${keeps}`,
  );
  const events: PlannedEvent[] = [];
  if (newVerdict(ctx, accepted)) {
    events.push({ type: 'Warning', reason: 'InvalidParameters', action: 'Validate', note: message });
  }
  if (ctx.live && !ctx.ours && newVerdict(ctx, programmed)) events.push(collisionEvent(programmed));
  return finish(ctx, [accepted, programmed, applied, lbAvailable(ctx)], { action: 'none' }, events, 'invalid');
}

// A Deployment with our name that this Gateway does not control is never
// adopted or changed (it may belong to a Gateway re-created under the same
// name, or to someone else entirely).
function planCollision(ctx: Context, configuration: GatewayConfiguration): Plan {
  const live = ctx.live as Deployment;
  const programmed = condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', collisionMessage(ctx, live));
  // Not applied, and no write will change that: False, with the reason.
  const applied = condition(
    ctx,
    CONDITION_APPLIED,
    'False',
    'ApplyFailed',
    `GatewayConfiguration ${configuration.metadata.name} generation ${configuration.metadata.generation ?? 0} is not applied: Deployment ${ctx.ref} is controlled by ${describeController(ctx, live)}, not by this Gateway; nothing was written`,
  );
  const lb = condition(ctx, CONDITION_LB_AVAILABLE, 'Unknown', 'Pending', 'No LB Deployment controlled by this Gateway');
  const events = newVerdict(ctx, programmed) ? [collisionEvent(programmed)] : [];
  return finish(ctx, [acceptedTrue(ctx), programmed, applied, lb], { action: 'none' }, events, 'collision');
}

function planAccepted(ctx: Context, configuration: GatewayConfiguration): Plan {
  const { observed, gateway } = ctx;
  const rendered = renderDeployment({
    template: observed.template.deployment,
    templateHash: observed.template.hash,
    gateway,
    configuration,
    settings: observed.settings,
    live: ctx.ours,
  });
  // Validation checks everything rendering can refuse; kept for safety.
  if (!rendered.ok) return planInvalid(ctx, rendered.error);
  const unwritable = renderedProblem(rendered.deployment);
  if (unwritable !== null) return planInvalid(ctx, unwritable);

  const current = currentState(gateway, configuration, observed.template.hash);
  const enforceReplicas = configuration.spec.horizontalScaling.enforceReplicas;
  const write = observed.write;
  const failure: WriteFailure | undefined = write !== undefined && !write.ok ? write.failure : undefined;
  const admitted = write?.ok === true && ctx.ours ? admissionChange(rendered.deployment, ctx.ours, enforceReplicas) : null;
  const action: DeploymentAction = admitted
    ? { action: 'record-admission', name: rendered.deployment.metadata.name, annotations: admitted.annotations }
    : deploymentAction(ctx, rendered.deployment, current, enforceReplicas);

  // A write is due and its outcome unknown: status waits for the next plan.
  // The dead-letter path writes status without writing the Deployment, so it
  // gets one regardless.
  if ((action.action === 'create' || action.action === 'update') && observed.retriesExhausted === undefined) {
    return { deployment: action, status: null, statusChanged: false, events: [], outcome: 'needs-write' };
  }

  const appliedState = readAppliedState(ctx.ours);
  // With a Deployment of ours in place, Programmed is True whatever happened
  // to this write: the Deployment serves traffic, and Applied carries the
  // failure. Without one, only a permanent failure (a refused create) makes it
  // False; transient and persistent failures leave it exactly as stored.
  const programmed: ConditionSpec | null = ctx.ours
    ? programmedTrue(ctx, ctx.ours)
    : failure?.class === 'permanent'
      ? condition(ctx, CONDITION_PROGRAMMED, 'False', 'Invalid', `Deployment ${ctx.ref} could not be created: ${errorText(failure)}`)
      : findCondition(ctx.stored, CONDITION_PROGRAMMED)
        ? null
        : condition(ctx, CONDITION_PROGRAMMED, 'Unknown', 'Pending', MESSAGE_WAITING);

  const applied = appliedCondition(ctx, configuration, current, appliedState, failure);
  const events: PlannedEvent[] = [];
  if (write?.ok === true && ctx.ours) {
    const before = write.before === null ? null : readAppliedState(write.before);
    if (write.before === null || !sameConfiguration(before, appliedState)) {
      events.push({
        type: 'Normal',
        reason: 'GatewayConfigurationApplied',
        action: write.before === null ? 'Create' : 'Update',
        note:
          write.before === null
            ? `Created Deployment ${ctx.ref} with ${describeApplied(appliedState, null)}`
            : `Updated Deployment ${ctx.ref} to ${describeApplied(appliedState, null)} (was ${describeApplied(before, null)})`,
      });
    }
  }
  if (admitted) {
    // Said once per write (no write loop follows: see admission-record.ts), so
    // an operator can see which of our values admission replaced.
    events.push({
      type: 'Normal',
      reason: 'MutatedByAdmission',
      action: 'Update',
      note: `Admission changed Deployment ${ctx.ref} as it was written: ${admitted.paths.join(', ')}. The stored form is recorded and will not be overwritten until the inputs or the Deployment change`,
    });
  }
  // On the dead-letter path the last attempt's failure is part of the
  // RetriesExhausted story, so that is the one Warning to tell.
  if (applied.reason === 'RetriesExhausted') {
    if (newVerdict(ctx, applied)) events.push({ type: 'Warning', reason: 'RetriesExhausted', action: 'Reconcile', note: applied.message });
  } else if (failure !== undefined) {
    events.push({ type: 'Warning', reason: 'ApplyFailed', action: ctx.live ? 'Update' : 'Create', note: applied.message });
  }

  const outcome: Outcome =
    failure !== undefined ? 'write-failed' : write?.ok ? 'applied' : action.action === 'none' ? 'in-sync' : 'needs-write';
  const specs = [acceptedTrue(ctx), ...(programmed ? [programmed] : []), applied, lbAvailable(ctx)];
  return finish(ctx, specs, action, events, outcome);
}

// Once this invocation has written (or tried to), it does not ask for another
// write: redelivery or the resync plans again from fresh reads.
function deploymentAction(ctx: Context, rendered: Deployment, current: AppliedState, enforceReplicas: boolean): DeploymentAction {
  if (ctx.observed.write !== undefined) return { action: 'none' };
  if (ctx.ours === null) return { action: 'create', object: rendered };
  // When the recorded inputs differ, a write is due anyway; it then carries
  // the managed fields exactly as rendered (see overlayManaged).
  const force = !sameState(readAppliedState(ctx.ours), current);
  const body = overlayManaged(ctx.ours, rendered, { force });
  if (!needsWrite(ctx.ours, body)) return { action: 'none' };
  // The only difference is what admission made of our last write of this
  // very render: writing again would be undone the same way (a write loop).
  if (!force && admissionExplains(ctx.ours, rendered, body, enforceReplicas)) return { action: 'none' };
  return { action: 'update', object: body };
}

// Applied=True exactly when the live annotations record the current inputs
// (invariant §7.3); otherwise why not.
function appliedCondition(
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

function lbAvailable(ctx: Context): ConditionSpec {
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

function acceptedTrue(ctx: Context): ConditionSpec {
  return condition(ctx, CONDITION_ACCEPTED, 'True', 'Accepted', acceptedMessage(ctx.observed.settings.controllerName));
}

function programmedTrue(ctx: Context, ours: Deployment): ConditionSpec {
  return condition(
    ctx,
    CONDITION_PROGRAMMED,
    'True',
    'Programmed',
    `Deployment ${ctx.ref} is programmed with ${describeApplied(readAppliedState(ours), null)} (Pods may still be initializing)`,
  );
}

function condition(
  ctx: Context,
  type: string,
  status: ConditionStatus,
  reason: string,
  message: string,
): ConditionSpec {
  return conditionAt(ctx.generation, type, status, reason, message);
}

function describeApplied(state: AppliedState | null, latest: GatewayConfiguration | null): string {
  if (state === null) return 'no recorded GatewayConfiguration';
  const replaced =
    latest !== null &&
    state.configurationName === latest.metadata.name &&
    state.configurationUid !== (latest.metadata.uid ?? '')
      ? ` (uid ${state.configurationUid}, since deleted and re-created)`
      : '';
  return `GatewayConfiguration ${state.configurationName} generation ${state.configurationGeneration}${replaced}`;
}

function describeController(ctx: Context, live: Deployment): string {
  const controller = controllerOf(live);
  if (controller === undefined) return 'no controller';
  const sameName = controller.kind === GATEWAY_KIND && controller.name === ctx.gateway.metadata.name;
  return `${controller.kind}/${controller.name}${sameName ? ` (uid ${controller.uid})` : ''}`;
}

function collisionMessage(ctx: Context, live: Deployment): string {
  return `Deployment ${ctx.ref} exists but is not controlled by this Gateway (controller: ${describeController(ctx, live)}); it is not adopted or changed`;
}

function collisionEvent(programmed: ConditionSpec): PlannedEvent {
  return { type: 'Warning', reason: 'NameCollision', action: 'Reconcile', note: programmed.message };
}

function errorText(failure: WriteFailure): string {
  return failure.code === undefined ? failure.message : `${failure.message} (HTTP ${failure.code})`;
}

// An Event marks a change of verdict; the same verdict observed again (a
// no-op reconcile) emits nothing (invariant §7.4).
function newVerdict(ctx: Context, spec: ConditionSpec): boolean {
  const stored = findCondition(ctx.stored, spec.type);
  return stored === undefined || stored.status !== spec.status || stored.reason !== spec.reason || stored.message !== spec.message;
}

function finish(
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
