// The pure planner: observed objects in; the Deployment write, the Gateway
// status and the Events out. No I/O, no clock (`now` is an input), no
// randomness: the same Observed always gives a deep-equal Plan.
//
// The I/O layer plans once; if the plan asks for a Deployment write it writes
// and plans again with the result (`write`), then writes the status when
// `statusChanged` and emits `events`. The first plan of a write therefore
// carries no status: the second one, which knows how the write went, decides.
import { gatewayAddresses } from './addresses.js';
import { currentState, readAppliedState } from './applied-annotations.js';
import { findCondition, type ConditionSpec } from './conditions.js';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE, CONDITION_PROGRAMMED } from '../../../api/names.js';
import { admissionChange } from './admission-record.js';
import { deploymentAction } from './deployment-action.js';
import { condition, nothing, type Context } from './plan-context.js';
import { planNotOurs } from './not-ours.js';
import type { DeploymentAction, Observed, Outcome, Plan, PlannedEvent, WriteFailure } from './plan-types.js';
import { collisionEvent, newVerdict, writeEvents } from './planned-events.js';
import { isControlledBy, renderDeployment } from './render-deployment.js';
import { deploymentName } from './names.js';
import type { Deployment, Gateway, GatewayConfiguration } from '../../../api/schemas.js';
import { renderedProblem } from './rendered-checks.js';
import { namespaceLabels } from './route-attachment.js';
import {
  acceptedTrue,
  appliedCondition,
  collisionMessage,
  describeApplied,
  describeController,
  errorText,
  finish,
  lbAvailable,
  MESSAGE_WAITING,
  programmedTrue,
} from './status-decisions.js';
import { validateParameters } from './validate-configuration.js';


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
  const events = writeEvents(ctx, { appliedState, admittedPaths: admitted?.paths ?? null, applied, failure });

  const outcome: Outcome =
    failure !== undefined ? 'write-failed' : write?.ok ? 'applied' : action.action === 'none' ? 'in-sync' : 'needs-write';
  const specs = [acceptedTrue(ctx), ...(programmed ? [programmed] : []), applied, lbAvailable(ctx)];
  return finish(ctx, specs, action, events, outcome);
}
