// The contract between the pure planner and the shell that observes, writes
// and reports, in one file that depends on nothing but api/. The planner is
// called once per attempt: plan(observed, input, now) either settles the
// Gateway (no Deployment write due) or asks for one write; after it, the
// shell calls planStatus(pending, outcome) once, which decides status and
// Events from what the write did. Nothing is planned twice.
import type { Condition, Deployment, Gateway, GatewayClass, GatewayConfiguration, L34Route, Namespace, PodDisruptionBudget } from '../../../api/schemas.js';

/** What observe read from the API server in this attempt, and nothing else. */
export interface Observed {
  key: { namespace: string; name: string };
  // null: deleted, nothing to do.
  gateway: Gateway | null;
  gatewayClass: GatewayClass | null;
  gatewayConfiguration: GatewayConfiguration | null;
  // The live sllbr-<gateway>, whoever owns it.
  deployment: Deployment | null;
  // The L34Routes that may attach: the Gateway's namespace's, or every
  // namespace's when a listener admits routes from other namespaces.
  routes: L34Route[];
  // Namespaces and their labels, read only when a listener selects namespaces
  // by label; null otherwise.
  namespaces: Namespace[] | null;
  // The live PodDisruptionBudget sllbr-<gateway>, whoever owns it (null:
  // absent); read only with the PDB setting on, undefined otherwise.
  pdb?: PodDisruptionBudget | null;
  // Every LB Deployment, Gateway and GatewayClass in scope, read only when
  // the planner asks (a pod-template change under the rollout budget:
  // ReadsPlan).
  rollouts?: RolloutCensus;
}

/** Process configuration the render depends on. */
export interface Settings {
  controllerName: string;
  lbServiceAccount: string;
  /** LB_ROLLOUT_BUDGET: at most this many LB pod-template rollouts at once; absent or 0: no limit. */
  rolloutBudget?: number;
  // LB_PDB_MAX_UNAVAILABLE: absent, no PodDisruptionBudgets (render-pdb.ts).
  lbPodDisruptionBudget?: LbPdbSetting;
}

/** One PodDisruptionBudget per LB Deployment, allowing this many (or this percentage of) Pods down by eviction. */
export interface LbPdbSetting {
  maxUnavailable: number | string;
}

/** What the planner is given besides the API objects and the clock. */
export interface PlanInput {
  template: { deployment: Deployment; hash: string };
  settings: Settings;
  // Set by the dead-letter path: Knative gave up delivering this Gateway's reconcile.
  retriesExhausted?: { message: string };
}

export type FailureClass = 'transient' | 'persistent' | 'permanent';

export interface WriteFailure {
  class: FailureClass;
  code?: number;
  message: string;
}

/** What the one Deployment write of an attempt did. */
export type WriteOutcome = { ok: true; written: Deployment } | { ok: false; failure: WriteFailure };

// The record of the inputs a Deployment was rendered from (docs/design.md §6).
export interface AppliedState {
  configurationName: string;
  configurationUid: string;
  configurationGeneration: number;
  gatewayGeneration: number;
  templateHash: string;
}

export interface StatusAddress {
  type: string;
  value: string;
}

export interface RouteGroupKind {
  group: string;
  kind: string;
}

export interface ListenerStatus {
  name: string;
  supportedKinds: RouteGroupKind[];
  attachedRoutes: number;
  conditions: Condition[];
}

/** What every branch of the planner decides from: the Gateway and its live Deployment, sorted into "whoever owns it" and "ours". */
export interface GatewayFacts {
  observed: Observed;
  input: PlanInput;
  // RFC 3339; the only clock the planner sees (lastTransitionTime).
  now: string;
  gateway: Gateway;
  generation: number;
  // namespace/name of the LB Deployment, for messages.
  ref: string;
  stored: Condition[];
  addresses: StatusAddress[];
  live: Deployment | null;
  ours: Deployment | null;
}

/** What planStatus needs after the write: the render and the inputs it records. */
export interface PendingStatus {
  facts: GatewayFacts;
  configuration: GatewayConfiguration;
  rendered: Deployment;
  current: AppliedState;
  enforceReplicas: boolean;
  // The live Deployment before the write (null: a create), for the Event.
  before: Deployment | null;
  // With the rollout budget on: the Gateway was in the rollout line before
  // this reconcile (rollout-budget.ts wasInLine), so a write that starts no
  // rollout takes it out of the line and the next must be woken.
  wasInLine: boolean;
}

export interface GatewayStatusPlan {
  conditions: Condition[];
  addresses: StatusAddress[];
  // Absent: leave status.listeners as stored.
  listeners?: ListenerStatus[];
}

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

/** The object an Event is about (events.k8s.io/v1 `regarding`). */
export interface EventRegarding {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string | undefined;
}

/** An Event about another object than the reconciled Gateway (an L34Route: route-feedback.ts). */
export interface RegardedEvent {
  regarding: EventRegarding;
  event: PlannedEvent;
}

export type SettledOutcome = 'not-found' | 'not-ours' | 'invalid' | 'collision' | 'in-sync' | 'write-failed' | 'applied' | 'rollout-queued';
export type Outcome = SettledOutcome | 'needs-write' | 'needs-reads';

export type DeploymentWrite = { action: 'create'; object: Deployment } | { action: 'update'; object: Deployment };

/**
 * After a write that admission changed: record what was stored, so that the
 * next reconcile does not take admission's change for drift (a metadata-only
 * merge patch; best effort).
 */
export interface AdmissionRecord {
  action: 'record-admission';
  name: string;
  annotations: Record<string, string>;
}

/**
 * The rollout index label of the Deployment to set (a value) or remove
 * (null): a metadata-only merge patch, no rollout (rollout-index.ts).
 */
/** A GatewayConfiguration at its current generation: the Deployments rendering an older one are behind it. */
export interface ConfigurationLine {
  uid: string;
  generation: number;
}

export interface IndexRecord {
  action: 'record-index';
  name: string;
  labels: Record<string, string | null>;
}

/** Nothing (more) to write to the Deployment: status and Events are decided. */
export interface SettledPlan {
  outcome: SettledOutcome;
  deployment: { action: 'none' } | AdmissionRecord | IndexRecord;
  // The desired full Gateway status; null: do not write status.
  status: GatewayStatusPlan | null;
  // Versus gateway.status: conditions ignoring lastTransitionTime, addresses and listeners.
  statusChanged: boolean;
  events: PlannedEvent[];
  /**
   * With the rollout budget on: this Gateway was in the rollout line, or
   * its Deployment held a slot, and after this reconcile it is neither (it
   * left the class, turned invalid, no longer needs a rollout) without
   * starting one. The shell wakes the next in line (docs/design.md §12).
   */
  wakeNext?: true;
}

/** One Deployment write is due; status waits for its outcome (planStatus). */
export interface WritePlan {
  outcome: 'needs-write';
  deployment: DeploymentWrite;
  pending: PendingStatus;
}

/** The plan needs more reads before it can decide: the rollout census (rollout-budget.ts). */
export interface ReadsPlan {
  outcome: 'needs-reads';
  reads: 'rollout-census';
  /** Its own Deployment is behind an edit of its configuration: the census reads that configuration's line too. */
  configurationLine?: ConfigurationLine;
}

export type Plan = SettledPlan | WritePlan;

/** What plan() answers: a plan, or the reads it needs first. */
export type Planned = Plan | ReadsPlan;

/**
 * What the budget is decided from: the LB Deployments this controller's
 * rollout index labels as possible slot holders, and the head of the line
 * (rollout-index.ts, rollout-census.ts). Any other Deployment in it is
 * ignored.
 */
export interface RolloutCensus {
  deployments: Deployment[];
}

/**
 * Why an LB Deployment holds a slot: its pod-template rollout is in
 * progress, or past its progress deadline (rollout-budget.ts rolloutState).
 */
export type SlotState = 'rolling' | 'stuck';

export interface SlotHolder {
  /** namespace/name of the LB Deployment. */
  ref: string;
  state: SlotState;
}

export interface BudgetVerdict {
  go: boolean;
  /** The LB Deployments holding the slots, in namespace/name order. */
  held: SlotHolder[];
  /** namespace/name of the Gateways that go before this one. */
  ahead: string[];
}

/** Why a due write was not made: the rollout budget queued it. */
export type Queued = BudgetVerdict & { budget: number };

export type DeploymentAction = Plan['deployment'];
