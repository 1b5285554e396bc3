// The rollout budget (LB_ROLLOUT_BUDGET, docs/operations.md "Rollout budget"):
// at most k LB Deployments of this controller with a pod-template change in
// progress at once. Decided from observed objects only: the LB Deployments
// (their status says who holds a slot, their applied-state annotations who
// is behind), the Gateways (their conditions say who is queued and who we
// accepted) and the GatewayClasses (which Gateways are this controller's).
// Nothing is remembered and nothing new is written: a queued Gateway gets no
// write at all, only its GatewayConfigurationApplied condition says why.
import { CONDITION_ACCEPTED, CONDITION_APPLIED, GATEWAY_KIND } from '../../../api/names.js';
import type { Deployment, Gateway, GatewayClass, GatewayConfiguration } from '../../../api/schemas.js';
import { readAppliedState } from './applied-annotations.js';
import type { BudgetVerdict, RolloutCensus, SlotHolder, SlotState } from './plan-types.js';
import { semanticSubset } from './deployment-diff.js';
import { acceptedMessage, ROLLOUT_QUEUED } from './status-decisions.js';
import { deploymentName } from './names.js';
import { indexValueOf, inLineByIndex, ROLLING, rolloutIndexKey } from './rollout-index.js';

export { ROLLOUT_QUEUED };

/**
 * Where a Deployment's rollout stands:
 * - `rolling`: a pod-template rollout in progress, by the rules of `kubectl
 *   rollout status` (the controller has not seen the latest spec, fewer
 *   replicas updated than wanted, old replicas still there, updated replicas
 *   not yet available);
 * - `stuck`: the Progressing condition says the progress deadline passed;
 * - `degraded`: the Deployment controller says its latest rollout completed
 *   (Progressing `NewReplicaSetAvailable`, and only the new ReplicaSet has
 *   Pods: `isCompleteDeployment` in k8s.io/kubernetes
 *   pkg/controller/deployment/progress.go, after which it estimates no
 *   progress), yet not every replica is available: a drained node, a Pod
 *   crash-looping, a scale-up the Nodes cannot take. No pod-template change
 *   is in progress, and none would end it;
 * - `settled`: every replica updated and available.
 * `rolling` and `stuck` hold a slot (a stuck rollout is what stops a broken
 * template after k Gateways); `degraded` and `settled` do not.
 */
export type RolloutState = 'settled' | SlotState | 'degraded';

export function rolloutState(d: Deployment): RolloutState {
  const status = d.status ?? {};
  if ((d.metadata.generation ?? 0) > (status.observedGeneration ?? 0)) return 'rolling';
  const progressing = (status.conditions ?? []).find((c) => c.type === 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') return 'stuck';
  const wanted = d.spec.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  const replicas = status.replicas ?? 0;
  const available = status.availableReplicas ?? 0;
  const complete = updated >= wanted && replicas <= updated && available >= updated;
  // The Deployment controller's own word that the latest rollout completed:
  // what is missing since is no rollout.
  if (progressing?.status === 'True' && progressing.reason === 'NewReplicaSetAvailable' && replicas === updated) return complete ? 'settled' : 'degraded';
  return complete ? 'settled' : 'rolling';
}

/** The slot a Deployment in this state holds, if any. */
export function slotOf(state: RolloutState): SlotState | null {
  return state === 'rolling' || state === 'stuck' ? state : null;
}

/** The inputs the Gateway being reconciled renders from now. */
export interface CurrentInputs {
  templateHash: string;
  configuration: GatewayConfiguration | null;
}

const refOf = (o: { metadata: { namespace?: string; name: string } }): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

const textOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The Gateway a Deployment belongs to, by its controller ownerReference. */
function ownerOf(d: Deployment): { ref: string; uid: string | undefined } | undefined {
  const owner = (d.metadata.ownerReferences ?? []).find((o) => o.controller === true && o.kind === GATEWAY_KIND);
  return owner ? { ref: `${d.metadata.namespace ?? ''}/${owner.name}`, uid: owner.uid } : undefined;
}

/** The Deployment is controlled by this very Gateway (not by an earlier one of the same name). */
function controlledBy(d: Deployment, gateway: Gateway): boolean {
  const owner = ownerOf(d);
  if (owner === undefined || owner.ref !== refOf(gateway)) return false;
  const uid = gateway.metadata.uid;
  return owner.uid === undefined || uid === undefined || owner.uid === uid;
}

function condition(gateway: Gateway, type: string): { status: string; reason: string; message?: string | undefined } | undefined {
  return (gateway.status?.conditions ?? []).find((c) => c.type === type);
}

export function isQueued(gateway: Gateway): boolean {
  const applied = condition(gateway, CONDITION_APPLIED);
  return applied?.status === 'False' && applied.reason === ROLLOUT_QUEUED;
}

/** Accepted by this controller, as its last reconcile wrote it. */
export function acceptedByUs(gateway: Gateway, controllerName: string): boolean {
  const accepted = condition(gateway, CONDITION_ACCEPTED);
  return accepted?.status === 'True' && accepted.message === acceptedMessage(controllerName);
}

/** A Gateway of this controller's classes that is not being deleted: whose Deployment the budget counts. */
export function servedGateway(gateway: Gateway, isOurClass: (name: string) => boolean): boolean {
  return gateway.metadata.deletionTimestamp === undefined && isOurClass(gateway.spec.gatewayClassName);
}

/**
 * The slot this Gateway's Deployment holds: only a Gateway of ours (class,
 * not being deleted) counts, and only the Deployment it controls. A Gateway
 * that left the class, or is gone, frees its slot at once, whatever its old
 * Deployment still does.
 */
export function slotHeld(gateway: Gateway, d: Deployment, isOurClass: (name: string) => boolean): SlotState | null {
  if (!servedGateway(gateway, isOurClass) || !controlledBy(d, gateway)) return null;
  return slotOf(rolloutState(d));
}

export function ourClasses(classes: readonly GatewayClass[], controllerName: string): (name: string) => boolean {
  const ours = new Set(classes.filter((c) => c.spec.controllerName === controllerName).map((c) => c.metadata.name));
  return (name) => ours.has(name);
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
  const uid = current.configuration?.metadata.uid;
  return uid !== undefined && applied.configurationUid === uid && applied.configurationGeneration < (current.configuration?.metadata.generation ?? 0);
}

/**
 * Labelled `rolling` but holding no slot (its rollout settled before the
 * label was taken back) and rendered from another template: in line like
 * any Deployment behind. The census reads every `rolling` one, so none is
 * missed; left out, a resync after a template change would let each of
 * them start at once, past the budget.
 */
function staleRollingBehind(d: Deployment, key: string, templateHash: string): boolean {
  if (indexValueOf(d, key) !== ROLLING) return false;
  const applied = readAppliedState(d);
  return applied !== null && applied.templateHash !== templateHash;
}

/**
 * Renders an older generation of the configuration being applied (the
 * census lists these when it is asked for the configuration's line): in
 * line, though no label says so yet, so that the fan-out of a shared
 * configuration's edit, which reconciles them all at once, starts no more
 * rollouts than the budget.
 */
function behindConfiguration(d: Deployment, configuration: GatewayConfiguration | null | undefined): boolean {
  const uid = configuration?.metadata.uid;
  if (uid === undefined) return false;
  const applied = readAppliedState(d);
  return applied !== null && applied.configurationUid === uid && applied.configurationGeneration < (configuration?.metadata.generation ?? 0);
}

/**
 * Who holds the slots, and the waiting line, from the census: the LB
 * Deployments this controller's index labels (rollout-index.ts). A
 * Deployment holds a slot when its label says `rolling` and its status says
 * it is rolling or stuck (a label not yet taken back from a settled or
 * degraded one holds none). In line: the Deployments whose label is
 * `queued` or the digest of another template than the current one, and
 * that hold no slot. The labels are written only for the Deployments that
 * accepted Gateways of this controller control, and taken back when a
 * Gateway leaves the class, turns invalid or is being deleted, so the line
 * has no one who would never roll. The line goes in the Deployments'
 * namespace/name order (the order the API server lists them in, so its first
 * page is the head of the line), which every replica computes alike from the
 * same lists: concurrent reconciles agree on who is next. `except`: a
 * Gateway that is gone (its delete event), whose Deployment waits for the
 * garbage collector.
 */
function waitingLine(census: RolloutCensus, templateHash: string, controllerName: string, except?: string, configuration?: GatewayConfiguration | null): { held: (SlotHolder & { owner: string })[]; line: { deployment: string; owner: string }[] } {
  const key = rolloutIndexKey(controllerName);
  const held: (SlotHolder & { owner: string })[] = [];
  const line: { deployment: string; owner: string }[] = [];
  const seen = new Set<string>();
  for (const d of census.deployments) {
    const owner = ownerOf(d);
    if (owner === undefined || owner.ref === except || d.metadata.deletionTimestamp !== undefined || seen.has(refOf(d))) continue;
    seen.add(refOf(d));
    const state = indexValueOf(d, key) === ROLLING ? slotOf(rolloutState(d)) : null;
    if (state !== null) held.push({ ref: refOf(d), state, owner: owner.ref });
    else if (inLineByIndex(d, key, templateHash) || staleRollingBehind(d, key, templateHash) || behindConfiguration(d, configuration)) line.push({ deployment: refOf(d), owner: owner.ref });
  }
  return { held: held.sort((a, b) => textOrder(a.ref, b.ref)), line: line.sort((a, b) => textOrder(a.deployment, b.deployment)) };
}

/**
 * The line as the observed objects alone tell it, for a reader that knows
 * no LB template (the kubectl plugin), from every LB Deployment and Gateway
 * it read: the slots held (the index's `rolling` whose status holds one),
 * and the Gateways queued, served and accepted by us, in the order their
 * Deployments go. A Gateway behind the template but not yet queued is not
 * in it: its own next reconcile queues it.
 */
export function observedLine(gateways: readonly Gateway[], deployments: readonly Deployment[], classes: readonly GatewayClass[], controllerName: string): { held: (SlotHolder & { owner: string })[]; line: string[] } {
  const key = rolloutIndexKey(controllerName);
  const isOurClass = ourClasses(classes, controllerName);
  const served = new Map(gateways.filter((g) => servedGateway(g, isOurClass)).map((g) => [refOf(g), g]));
  const held: (SlotHolder & { owner: string })[] = [];
  const queued: { deployment: string; owner: string }[] = [];
  for (const d of deployments) {
    const owner = ownerOf(d);
    const gateway = owner === undefined ? undefined : served.get(owner.ref);
    if (gateway === undefined || !controlledBy(d, gateway)) continue;
    const state = indexValueOf(d, key) === ROLLING ? slotOf(rolloutState(d)) : null;
    if (state !== null) held.push({ ref: refOf(d), state, owner: refOf(gateway) });
    else if (isQueued(gateway) && acceptedByUs(gateway, controllerName)) queued.push({ deployment: refOf(d), owner: refOf(gateway) });
  }
  return { held: held.sort((a, b) => textOrder(a.ref, b.ref)), line: queued.sort((a, b) => textOrder(a.deployment, b.deployment)).map((q) => q.owner) };
}

/**
 * Whether the Gateway `self` may start a pod-template change now: when the
 * slots held (its own Deployment's excepted: a second change to a rolling
 * Deployment adds no rollout) and the Gateways before it in the line leave
 * a slot.
 */
export function rolloutBudget(self: Gateway, budget: number, census: RolloutCensus, current: CurrentInputs, controllerName: string): BudgetVerdict {
  const me = refOf(self);
  const mine = `${self.metadata.namespace ?? ''}/${deploymentName(self.metadata.name)}`;
  const { held, line } = waitingLine(census, current.templateHash, controllerName, undefined, current.configuration);
  const others = held.filter((h) => h.owner !== me).map(({ ref, state }) => ({ ref, state }));
  const ahead = line.filter((l) => l.owner !== me && l.deployment < mine).map((l) => l.owner);
  return { go: others.length + ahead.length < budget, held: others, ahead };
}

/**
 * The Gateways to wake when a slot frees or the line shortens: the first
 * of the line, as many as there are free slots (`except`: the Gateway whose
 * reconcile asks, already handled, or the one deleted).
 */
export function nextInLine(budget: number, census: RolloutCensus, templateHash: string, controllerName: string, except?: string): string[] {
  const { held, line } = waitingLine(census, templateHash, controllerName, except);
  return line.map((l) => l.owner).slice(0, Math.max(0, budget - held.length));
}

/** How many of the line's head a census must list so that every verdict and wake it serves is exact: the budget, every holder, and the asking Gateway itself. */
export function lineHeadLength(budget: number, holders: number): number {
  return budget + holders + 1;
}

/**
 * Whether the Gateway, as stored before this reconcile, was in the line
 * (accepted by us, and queued or behind) or its Deployment held a slot:
 * if this reconcile leaves it neither without starting a rollout, the next
 * in line must be woken (plan.ts sets `wakeNext`).
 */
export function wasInLine(gateway: Gateway, ours: Deployment | null, current: CurrentInputs, controllerName: string): boolean {
  if (gateway.metadata.deletionTimestamp !== undefined || !acceptedByUs(gateway, controllerName)) return false;
  return isQueued(gateway) || (ours !== null && behind(ours, current));
}

/** Its own Deployment holds a slot. */
export function holdsSlot(ours: Deployment | null): boolean {
  return ours !== null && slotOf(rolloutState(ours)) !== null;
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
