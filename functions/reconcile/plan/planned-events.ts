// The Events a plan emits. An Event marks a change: a new verdict, or a write
// that happened in this invocation; a no-op reconcile emits none.
import { readAppliedState, sameConfiguration } from './applied-annotations.js';
import { findCondition, type ConditionSpec } from './conditions.js';
import type { Deployment } from '../../../api/schemas.js';
import type { GatewayFacts, PlannedEvent, WriteFailure } from './plan-types.js';
import { describeApplied } from './status-decisions.js';

export function collisionEvent(programmed: ConditionSpec): PlannedEvent {
  return { type: 'Warning', reason: 'NameCollision', action: 'Reconcile', note: programmed.message };
}

// An Event marks a change of verdict; the same verdict observed again (a
// no-op reconcile) emits nothing (invariant §7.4).
export function newVerdict(ctx: GatewayFacts, spec: ConditionSpec): boolean {
  const stored = findCondition(ctx.stored, spec.type);
  return stored === undefined || stored.status !== spec.status || stored.reason !== spec.reason || stored.message !== spec.message;
}

/** Invalid parameters: a Warning for a new verdict, and for a collision seen on the way. */
export function invalidEvents(ctx: GatewayFacts, conditions: { accepted: ConditionSpec; programmed: ConditionSpec }, message: string): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  if (newVerdict(ctx, conditions.accepted)) events.push({ type: 'Warning', reason: 'InvalidParameters', action: 'Validate', note: message });
  if (ctx.live && !ctx.ours && newVerdict(ctx, conditions.programmed)) events.push(collisionEvent(conditions.programmed));
  return events;
}

/** What this invocation's write did, and why it failed if it did. */
export function writeEvents(
  ctx: GatewayFacts,
  outcome: { before: Deployment | null; written: boolean; admittedPaths: string[] | null; applied: ConditionSpec; failure: WriteFailure | undefined },
): PlannedEvent[] {
  const { applied, failure } = outcome;
  const appliedState = readAppliedState(ctx.ours);
  const events: PlannedEvent[] = [];
  if (outcome.written && ctx.ours) {
    const before = outcome.before === null ? null : readAppliedState(outcome.before);
    if (outcome.before === null || !sameConfiguration(before, appliedState)) {
      events.push({
        type: 'Normal',
        reason: 'GatewayConfigurationApplied',
        action: outcome.before === null ? 'Create' : 'Update',
        note:
          outcome.before === null
            ? `Created Deployment ${ctx.ref} with ${describeApplied(appliedState, null)}`
            : `Updated Deployment ${ctx.ref} to ${describeApplied(appliedState, null)} (was ${describeApplied(before, null)})`,
      });
    }
  }
  if (outcome.admittedPaths !== null) {
    // Said once per write (no write loop follows: see admission-record.ts), so
    // an operator can see which of our values admission replaced.
    events.push({
      type: 'Normal',
      reason: 'MutatedByAdmission',
      action: 'Update',
      note: `Admission changed Deployment ${ctx.ref} as it was written: ${outcome.admittedPaths.join(', ')}. The stored form is recorded and will not be overwritten until the inputs or the Deployment change`,
    });
  }
  // On the dead-letter path the last attempt's failure is part of the
  // RetriesExhausted story, so that is the one Warning to tell.
  if (applied.reason === 'RetriesExhausted') {
    if (newVerdict(ctx, applied)) events.push({ type: 'Warning', reason: 'RetriesExhausted', action: 'Reconcile', note: applied.message });
  } else if (failure !== undefined) {
    events.push({ type: 'Warning', reason: 'ApplyFailed', action: ctx.live ? 'Update' : 'Create', note: applied.message });
  }
  return events;
}
