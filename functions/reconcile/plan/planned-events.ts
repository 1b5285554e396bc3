// The Events a plan emits. An Event marks a change: a new verdict, or a write
// that happened in this invocation; a no-op reconcile emits none.
import { readAppliedState, sameConfiguration, type AppliedState } from './applied-annotations.js';
import { findCondition, type ConditionSpec } from './conditions.js';
import type { Context } from './plan-context.js';
import type { PlannedEvent, WriteFailure } from './plan-types.js';
import { describeApplied } from './status-decisions.js';

export function collisionEvent(programmed: ConditionSpec): PlannedEvent {
  return { type: 'Warning', reason: 'NameCollision', action: 'Reconcile', note: programmed.message };
}

// An Event marks a change of verdict; the same verdict observed again (a
// no-op reconcile) emits nothing (invariant §7.4).
export function newVerdict(ctx: Context, spec: ConditionSpec): boolean {
  const stored = findCondition(ctx.stored, spec.type);
  return stored === undefined || stored.status !== spec.status || stored.reason !== spec.reason || stored.message !== spec.message;
}

/** What this invocation's write did, and why it failed if it did. */
export function writeEvents(
  ctx: Context,
  outcome: { appliedState: AppliedState | null; admittedPaths: string[] | null; applied: ConditionSpec; failure: WriteFailure | undefined },
): PlannedEvent[] {
  const write = ctx.observed.write;
  const { appliedState, applied, failure } = outcome;
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
