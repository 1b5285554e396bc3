// The rollout index (docs/design.md §12, "Linear cost"): one label on each LB
// Deployment of this controller's Gateways, so that the rollout census is
// two small label-selected lists instead of every LB Deployment and every
// Gateway. It is derived from the Deployment's own status and applied-state
// annotations and from what this controller's last reconcile of the Gateway
// decided; it decides nothing itself: who holds a slot is still read from
// the Deployment's status (rollout-budget.ts rolloutState), the label only
// says which Deployments to read. Its key names the controller (a digest of
// CONTROLLER_NAME), so two installs never see each other's.
//
// Values:
// - `rolling`: a create or pod-template change of ours that has not been
//   seen settled (or a Deployment whose status says it holds a slot);
// - `queued`: its Gateway waits for the budget for a change the template
//   value would not show (its configuration moved, its own spec changed);
// - `t-<digest>`: anything else: the digest of the template its applied
//   state records. A digest other than the current template's puts the
//   Deployment in line (behind), without any write when the template changes.
// Absent: not ours, not accepted, being deleted, or the budget off.
//
// Beside it, two labels name the GatewayConfiguration (uid) and generation
// the Deployment's applied state records, so that a census can find, in one
// page, the Deployments behind an edit of a shared configuration before any
// of them is queued: the fan-out reconciles them all at once, and each must
// see the others in line.
import { MERIDIO_GROUP } from '../../../api/names.js';
import type { Deployment } from '../../../api/schemas.js';
import { readAppliedState } from './applied-annotations.js';
import { sha256Hex } from './canonical-json.js';
import type { ConfigurationLine, IndexRecord } from './plan-types.js';

export const ROLLING = 'rolling';
export const QUEUED = 'queued';

/** The label key of this controller's index. */
export function rolloutIndexKey(controllerName: string): string {
  return `${MERIDIO_GROUP}/rollout-${sha256Hex(controllerName, 10)}`;
}

/** The value of a Deployment rendered from this template and not rolling. */
export function templateValue(templateHash: string): string {
  return `t-${sha256Hex(templateHash, 16)}`;
}

/** Selects the Deployments that may hold a slot. */
export function holderSelector(key: string): string {
  return `${key}=${ROLLING}`;
}

/** Selects the Deployments in line: queued, or rendered from another template than the current one. */
export function lineSelector(key: string, templateHash: string): string {
  return `${key},${key} notin (${ROLLING},${templateValue(templateHash)})`;
}

/** The keys of the labels naming the configuration a Deployment renders (uid) and its generation. */
export function configurationKeys(controllerName: string): { uid: string; generation: string } {
  const key = rolloutIndexKey(controllerName);
  return { uid: `${key}-cfg`, generation: `${key}-gen` };
}

/** The configuration labels a Deployment should carry, from its applied state (`on`: the budget is; all null otherwise). */
export function configurationLabels(d: Deployment, controllerName: string, on: boolean): Record<string, string | null> {
  const keys = configurationKeys(controllerName);
  const applied = on ? readAppliedState(d) : null;
  const uid = applied?.configurationUid ?? '';
  return { [keys.uid]: uid === '' ? null : uid, [keys.generation]: uid === '' || applied === null ? null : String(applied.configurationGeneration) };
}

/** Selects the Deployments that render an older generation of this configuration (generations only grow). */
export function configurationLineSelector(controllerName: string, line: ConfigurationLine): string {
  const keys = configurationKeys(controllerName);
  return `${keys.uid}=${line.uid},${keys.generation}!=${line.generation}`;
}

export function indexValueOf(d: Deployment, key: string): string | undefined {
  return d.metadata.labels?.[key];
}

/** In line by its label (the census lists exactly these), whatever its Gateway stores. */
export function inLineByIndex(d: Deployment, key: string, templateHash: string): boolean {
  const value = indexValueOf(d, key);
  return value !== undefined && value !== ROLLING && value !== templateValue(templateHash);
}

/**
 * The value a Deployment of an accepted Gateway of ours should carry:
 * `rolling` while a rollout of ours may be in progress (`startsRollout`: this
 * very write creates it or changes its pod template; `holdsSlot`: its status
 * says so), `queued` for a Gateway the budget queues that the template value
 * would not show in line, and the template digest otherwise.
 */
export function desiredIndex(d: Deployment, o: { startsRollout: boolean; holdsSlot: boolean; queued: boolean; key: string; templateHash: string }): string | null {
  if (o.startsRollout || o.holdsSlot) return ROLLING;
  const applied = readAppliedState(d);
  const recorded = applied === null ? null : templateValue(applied.templateHash);
  if (o.queued) {
    const value = indexValueOf(d, o.key);
    // Already in line by its value (queued, or behind the template): no write.
    if (value !== undefined && value !== ROLLING && value !== templateValue(o.templateHash)) return value;
    if (recorded !== null && recorded !== templateValue(o.templateHash)) return recorded;
    return QUEUED;
  }
  return recorded;
}

/** The labels (null: removed) that differ from the Deployment's own. */
function changed(d: Deployment, labels: Record<string, string | null>): Record<string, string | null> {
  return Object.fromEntries(Object.entries(labels).filter(([k, v]) => (d.metadata.labels?.[k] ?? null) !== v));
}

/** The Deployment with these labels set (removed for null). */
export function withLabels(d: Deployment, labels: Record<string, string | null>): Deployment {
  const next: Record<string, string> = { ...d.metadata.labels };
  for (const [k, v] of Object.entries(labels)) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  return { ...d, metadata: { ...d.metadata, labels: next } };
}

/** Whether the Deployment carries these labels already. */
export function hasLabels(d: Deployment, labels: Record<string, string | null>): boolean {
  return Object.keys(changed(d, labels)).length === 0;
}

/** The metadata patch that brings the live labels to these, or null when they are there already. */
export function indexRecord(live: Deployment, labels: Record<string, string | null>): IndexRecord | null {
  const diff = changed(live, labels);
  return Object.keys(diff).length === 0 ? null : { action: 'record-index', name: live.metadata.name, labels: diff };
}
