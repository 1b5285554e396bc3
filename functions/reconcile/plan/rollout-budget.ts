// The rollout budget (LB_ROLLOUT_BUDGET, docs/operations.md "Rollout budget"):
// at most k LB Deployments of this controller with a pod-template change in
// progress at once. Decided from observed objects only: the LB Deployments
// (their status says who is rolling, their applied-state annotations who is
// behind) and the Gateways (their conditions say who is queued). Nothing is
// remembered and nothing new is written: a queued Gateway gets no write at
// all, only its GatewayConfigurationApplied condition says why.
import { CONDITION_ACCEPTED, CONDITION_APPLIED, GATEWAY_KIND } from '../../../api/names.js';
import type { Deployment, Gateway, GatewayConfiguration } from '../../../api/schemas.js';
import { readAppliedState } from './applied-annotations.js';
import type { BudgetVerdict, RolloutCensus } from './plan-types.js';
import { semanticSubset } from './deployment-diff.js';

export const ROLLOUT_QUEUED = 'RolloutQueued';

/**
 * Where a Deployment's rollout stands, by the rules of `kubectl rollout
 * status`: `settled` once the controller has seen the latest spec and every
 * replica is updated and available; `stuck` when the Progressing condition
 * says the progress deadline passed; `rolling` otherwise. A stuck rollout
 * keeps its slot: that is what stops a broken template after k Gateways.
 */
export type RolloutState = 'settled' | 'rolling' | 'stuck';

export function rolloutState(d: Deployment): RolloutState {
  const status = d.status ?? {};
  if ((d.metadata.generation ?? 0) > (status.observedGeneration ?? 0)) return 'rolling';
  const progressing = (status.conditions ?? []).find((c) => c.type === 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') return 'stuck';
  const wanted = d.spec.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  if (updated < wanted) return 'rolling';
  // Old replicas still terminating.
  if ((status.replicas ?? 0) > updated) return 'rolling';
  if ((status.availableReplicas ?? 0) < updated) return 'rolling';
  return 'settled';
}

/** The inputs the Gateway being reconciled renders from now. */
export interface CurrentInputs {
  templateHash: string;
  configuration: GatewayConfiguration;
}

const refOf = (o: { metadata: { namespace?: string; name: string } }): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The Gateway a Deployment belongs to, by its controller ownerReference. */
function ownerRef(d: Deployment): string | undefined {
  const owner = (d.metadata.ownerReferences ?? []).find((o) => o.controller === true && o.kind === GATEWAY_KIND);
  return owner ? `${d.metadata.namespace ?? ''}/${owner.name}` : undefined;
}

function condition(gateway: Gateway, type: string): { status: string; reason: string } | undefined {
  return (gateway.status?.conditions ?? []).find((c) => c.type === type);
}

export function isQueued(gateway: Gateway): boolean {
  const applied = condition(gateway, CONDITION_APPLIED);
  return applied?.status === 'False' && applied.reason === ROLLOUT_QUEUED;
}

/**
 * Behind the inputs this reconcile sees, so its Gateway will want a rollout
 * too: rendered from another template, or from an older generation of the
 * same GatewayConfiguration. This is what keeps a burst (a resync after a
 * template change, the fan-out of a shared configuration's edit) from
 * starting every rollout at once before any Gateway is queued.
 */
function behind(d: Deployment, current: CurrentInputs): boolean {
  const applied = readAppliedState(d);
  if (applied === null) return false;
  if (applied.templateHash !== current.templateHash) return true;
  const uid = current.configuration.metadata.uid;
  return uid !== undefined && applied.configurationUid === uid && applied.configurationGeneration < (current.configuration.metadata.generation ?? 0);
}

/**
 * The waiting line: every Gateway of ours whose Deployment is not rolling and
 * that is queued, or accepted with a settled Deployment that is `behind`. It
 * goes in namespace/name order, which every replica computes alike from the
 * same lists, so concurrent reconciles agree on who is next.
 */
function waitingLine(census: RolloutCensus, isBehind: (d: Deployment) => boolean): { rolling: Deployment[]; line: string[] } {
  const owned = new Map<string, Deployment>();
  for (const d of census.deployments) {
    const owner = ownerRef(d);
    if (owner !== undefined) owned.set(owner, d);
  }
  const rolling = census.deployments.filter((d) => rolloutState(d) !== 'settled');
  const rollingOwners = new Set(rolling.map(ownerRef));
  const line = census.gateways
    .filter((g) => !rollingOwners.has(refOf(g)))
    .filter((g) => {
      if (isQueued(g)) return true;
      const d = owned.get(refOf(g));
      return d !== undefined && condition(g, CONDITION_ACCEPTED)?.status === 'True' && isBehind(d);
    })
    .map(refOf)
    .sort();
  return { rolling, line };
}

/**
 * Whether the Gateway `self` may start a pod-template change now: when the
 * rollouts in progress (its own Deployment's excepted: a second change to a
 * rolling Deployment adds no rollout) and the Gateways before it in the line
 * leave a slot.
 */
export function rolloutBudget(self: Gateway, budget: number, census: RolloutCensus, current: CurrentInputs): BudgetVerdict {
  const me = refOf(self);
  const { rolling, line } = waitingLine(census, (d) => behind(d, current));
  const others = rolling.filter((d) => ownerRef(d) !== me).map(refOf).sort();
  const ahead = line.filter((ref) => ref !== me && ref < me);
  return { go: others.length + ahead.length < budget, rolling: others, ahead };
}

/**
 * The Gateways to wake when a slot frees (a Deployment's rollout settled):
 * the first of the line, as many as there are free slots. Dispatch knows the
 * template but no GatewayConfiguration, so "behind" is the template's alone
 * here; a Gateway behind its configuration was queued by its own reconcile.
 */
export function nextInLine(budget: number, census: RolloutCensus, templateHash: string): string[] {
  const { rolling, line } = waitingLine(census, (d) => readAppliedState(d)?.templateHash !== templateHash && readAppliedState(d) !== null);
  return line.slice(0, Math.max(0, budget - rolling.length));
}

/**
 * Whether writing `body` over `live` changes the pod template, that is,
 * starts a rollout. Compared as the write decision is (deployment-diff.ts):
 * what the API server defaults on the live side is no change. A write that
 * only removes a key the live template carries (an annotation dropped from
 * the template) is not seen here and does not wait.
 */
export function changesPodTemplate(live: Deployment, body: Deployment): boolean {
  return !semanticSubset(body.spec.template, live.spec.template);
}
