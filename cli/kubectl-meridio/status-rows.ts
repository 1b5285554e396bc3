import { APPLIED_CONFIGURATION_GENERATION, CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_PROGRAMMED } from '../../api/names.js';
import type { Condition, Deployment, Gateway, GatewayClass, GatewayConfiguration } from '../../api/schemas.js';
import { findCondition } from '../../functions/reconcile/plan/conditions.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import { effectiveParametersRef, readableRef } from '../../functions/reconcile/plan/parameters-ref.js';
import { isControlledBy } from '../../functions/reconcile/plan/render-deployment.js';
import { isQueued, observedLine, ourClasses, rolloutState, type RolloutState } from '../../functions/reconcile/plan/rollout-budget.js';

// One row per Gateway of this controller: what the controller reported (its
// conditions) next to what it actually did (the generation recorded on the
// LB Deployment) and what it should converge to (the GatewayConfiguration's
// current generation), the LB's rollout and since when this is so. Pure:
// objects in, rows out. The kubectl plugin's `status` and `npm start`'s live
// table both render these rows; the rules (whose Deployment, which
// configuration, the rollout line) are the planner's own, imported.

export interface StatusSnapshot {
  controllerName: string;
  /** The Gateways to show a row for (those of other controllers' classes are left out). */
  gateways: Gateway[];
  classes: GatewayClass[];
  configurations: GatewayConfiguration[];
  deployments: Deployment[];
  /** Every namespace's Gateways and LB Deployments, which the rollout line spans; absent: those above. */
  cluster?: { gateways: Gateway[]; deployments: Deployment[] };
}

export interface ConditionCell {
  status: Condition['status'];
  reason: string;
  message: string;
}

export interface AppliedCell {
  /** The GatewayConfiguration generation the LB Deployment records; null: none recorded, or no Deployment of this Gateway. */
  generation: number | null;
  /** The GatewayConfiguration's current generation; null: no configuration found. */
  latest: number | null;
  /** The latest generation is applied, the Gateway's status says so, and says it of the Gateway's current spec. */
  ok: boolean;
  /** Why not, when not ok: the Applied condition's reason, NoStatus (never reported) or NotYetReconciled (the status predates the latest change). */
  reason: string | null;
  message: string;
}

export type RolloutCell =
  | { state: RolloutState }
  | { state: 'queued'; position: number; held: string[] }
  | { state: 'none' };

export interface GatewayRow {
  namespace: string;
  name: string;
  gatewayClass: string;
  /** `name`, or `namespace/name` for a class default in another namespace; null: none referenced. */
  configuration: string | null;
  accepted: ConditionCell | null;
  programmed: ConditionCell | null;
  applied: AppliedCell;
  lb: { available: number; desired: number } | null;
  rollout: RolloutCell;
  /** When the state shown began: the latest transition of the three conditions (the Gateway's creation without any). */
  since: string | null;
}

export const NO_STATUS = 'NoStatus';
export const NOT_YET_RECONCILED = 'NotYetReconciled';

const key = (namespace: string | undefined, name: string): string => `${namespace ?? ''}/${name}`;

function cell(c: Condition | undefined): ConditionCell | null {
  return c === undefined ? null : { status: c.status, reason: c.reason, message: c.message };
}

function appliedCell(gw: Gateway, ours: Deployment | null, latest: number | null): AppliedCell {
  const recorded = ours?.metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION];
  const generation = recorded !== undefined && /^(0|[1-9][0-9]*)$/.test(recorded) ? Number(recorded) : null;
  const c = findCondition(gw.status?.conditions ?? [], CONDITION_APPLIED);
  const base = { generation, latest, message: c?.message ?? '' };
  if (c === undefined) return { ...base, ok: false, reason: NO_STATUS };
  if (c.status !== 'True') return { ...base, ok: false, reason: c.reason };
  const current = (c.observedGeneration ?? 0) >= (gw.metadata.generation ?? 0) && (latest === null || generation === latest);
  return current ? { ...base, ok: true, reason: null } : { ...base, ok: false, reason: NOT_YET_RECONCILED };
}

function since(gw: Gateway): string | null {
  const times = [CONDITION_ACCEPTED, CONDITION_PROGRAMMED, CONDITION_APPLIED]
    .map((t) => findCondition(gw.status?.conditions ?? [], t)?.lastTransitionTime)
    .filter((t): t is string => t !== undefined)
    .sort();
  const created = (gw.metadata as { creationTimestamp?: unknown }).creationTimestamp;
  return times.at(-1) ?? (typeof created === 'string' ? created : null);
}

export function statusRows(s: StatusSnapshot): GatewayRow[] {
  const isOurs = ourClasses(s.classes, s.controllerName);
  const classes = new Map(s.classes.map((c) => [c.metadata.name, c]));
  const configurations = new Map(s.configurations.map((c) => [key(c.metadata.namespace, c.metadata.name), c]));
  const deployments = new Map(s.deployments.map((d) => [key(d.metadata.namespace, d.metadata.name), d]));
  const cluster = s.cluster ?? { gateways: s.gateways, deployments: s.deployments };
  const { held, line } = observedLine(cluster.gateways, cluster.deployments, s.classes, s.controllerName);
  const holders = held.map((h) => `${h.ref} (${h.state})`);
  return s.gateways
    .filter((gw) => isOurs(gw.spec.gatewayClassName))
    .map((gw): GatewayRow => {
      const namespace = gw.metadata.namespace ?? '';
      const live = deployments.get(key(namespace, deploymentName(gw.metadata.name)));
      const ours = live !== undefined && isControlledBy(live, gw) ? live : null;
      const ref = effectiveParametersRef(gw, classes.get(gw.spec.gatewayClassName) ?? null);
      const cfg = readableRef(ref) ? configurations.get(key(ref.namespace, ref.name)) : undefined;
      const position = line.indexOf(key(namespace, gw.metadata.name));
      const rollout: RolloutCell = isQueued(gw) && position >= 0
        ? { state: 'queued', position: position + 1, held: holders }
        : ours === null ? { state: 'none' } : { state: rolloutState(ours) };
      return {
        namespace,
        name: gw.metadata.name,
        gatewayClass: gw.spec.gatewayClassName,
        configuration: ref === undefined ? null : ref.namespace !== undefined && ref.namespace !== namespace ? `${ref.namespace}/${ref.name}` : ref.name,
        accepted: cell(findCondition(gw.status?.conditions ?? [], CONDITION_ACCEPTED)),
        programmed: cell(findCondition(gw.status?.conditions ?? [], CONDITION_PROGRAMMED)),
        applied: appliedCell(gw, ours, cfg === undefined ? null : (cfg.metadata.generation ?? 0)),
        // An unset spec.replicas means 1 to the Deployment controller.
        lb: ours === null ? null : { available: ours.status?.availableReplicas ?? 0, desired: ours.spec.replicas ?? 1 },
        rollout,
        since: since(gw),
      };
    })
    .sort((a, b) => (key(a.namespace, a.name) < key(b.namespace, b.name) ? -1 : key(a.namespace, a.name) > key(b.namespace, b.name) ? 1 : 0));
}
