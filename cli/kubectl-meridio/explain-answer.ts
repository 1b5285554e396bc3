// The one sentence `kubectl meridio explain` answers with: did the latest
// GatewayConfiguration reach the LB Deployment, and if not, why and since
// when. Pure: the observed objects (observe.ts), what the controller runs
// and the Warnings in; the state and the sentence out. The words for the
// controller's own verdicts come from its conditions; what the live objects
// say (the applied-state annotations, the rollout, the budget's line) is
// computed with the function's own code, never a copy of its rules.
import { CONDITION_ACCEPTED, CONDITION_APPLIED } from '../../api/names.js';
import type { Condition, Deployment, Gateway } from '../../api/schemas.js';
import { currentState, readAppliedState, sameConfiguration, sameState } from '../../functions/reconcile/plan/applied-annotations.js';
import { findCondition } from '../../functions/reconcile/plan/conditions.js';
import type { AppliedState, BudgetVerdict, Observed, RolloutCensus } from '../../functions/reconcile/plan/plan-types.js';
import { controllerOf, isControlledBy } from '../../functions/reconcile/plan/render-deployment.js';
import { rolloutBudget, rolloutState, ROLLOUT_QUEUED } from '../../functions/reconcile/plan/rollout-budget.js';
import { acceptedMessage } from '../../functions/reconcile/plan/status-decisions.js';
import { age } from './age.js';
import { progressingCondition, rolloutStatus } from './rollout-status.js';
import { deadLettered, type WarningEvent } from './warning-events.js';

export type ExplainState =
  | 'not-ours'
  | 'invalid'
  | 'collision'
  | 'not-reconciled'
  | 'pending'
  | 'queued'
  | 'apply-failed'
  | 'retries-exhausted'
  | 'stuck'
  | 'rolling'
  | 'degraded'
  | 'applied';

export interface ExplainFacts {
  observed: Observed & { gateway: Gateway };
  controllerName: string;
  /** The hash of the template the controller runs; undefined: not known. */
  templateHash: string | undefined;
  rolloutBudget: number;
  /** Read only when the Gateway waits for the budget. */
  census: RolloutCensus | undefined;
  events: readonly WarningEvent[];
  now: Date;
}

export interface Answer {
  state: ExplainState;
  sentence: string;
  /** The inputs the Deployment records and the live ones (null: unknown). */
  recorded: AppliedState | null;
  current: AppliedState | null;
  /** The budget's verdict for this Gateway, when it waits. */
  line?: BudgetVerdict;
}

const refOf = (m: { namespace?: string | undefined; name: string }): string => `${m.namespace ?? ''}/${m.name}`;

function configText(s: AppliedState): string {
  return `GatewayConfiguration ${s.configurationName} generation ${s.configurationGeneration}`;
}

/** What the LB Pods run while the latest is not applied. */
function keeps(recorded: AppliedState | null, current: AppliedState | null, ours: Deployment | null): string {
  if (ours === null) return 'no LB Deployment of this Gateway runs';
  if (recorded === null) return 'the LB Pods run a Deployment that records no GatewayConfiguration';
  if (current !== null && sameConfiguration({ ...recorded, configurationGeneration: 0 }, { ...current, configurationGeneration: 0 })) return `the LB Pods keep running generation ${recorded.configurationGeneration}`;
  return `the LB Pods keep running ${configText(recorded)}`;
}

/** The write error, in an operator's words: who refused it. */
export function failurePhrase(error: string): string {
  const http = / \(HTTP (\d+)\)$/.exec(error)?.[1];
  const code = http === undefined ? '' : ` (HTTP ${http})`;
  const policy = /ValidatingAdmissionPolicy '([^']+)'/.exec(error)?.[1];
  if (policy !== undefined) return `the Deployment write is denied by ValidatingAdmissionPolicy ${policy}${code}`;
  const webhook = /admission webhook "([^"]+)" denied/.exec(error)?.[1];
  if (webhook !== undefined) return `the Deployment write is denied by admission webhook ${webhook}${code}`;
  if (/ is forbidden: User "[^"]+" cannot /.test(error)) return `the controller is not allowed to write the Deployment (RBAC)${code}`;
  return `the Deployment write failed: ${error}`;
}

/** The error an ApplyFailed or RetriesExhausted message carries (status-decisions.ts appliedCondition). */
export function writeError(applied: Condition): string | undefined {
  const message = applied.message ?? '';
  if (applied.reason === 'RetriesExhausted') return /; last error: (.*)$/s.exec(message)?.[1];
  const at = message.indexOf(': ');
  return at < 0 ? undefined : message.slice(at + 2);
}

function forHowLong(c: Condition | undefined, now: Date): string {
  const a = age(c?.lastTransitionTime, now);
  return a === undefined ? '' : ` for ${a}`;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** What changed since the Deployment was written, in the order an operator checks. */
function changes(recorded: AppliedState, current: AppliedState): string[] {
  const out: string[] = [];
  if (!sameConfiguration(recorded, current)) {
    out.push(recorded.configurationName === current.configurationName && recorded.configurationUid === current.configurationUid
      ? `the GatewayConfiguration moved from generation ${recorded.configurationGeneration} to ${current.configurationGeneration}`
      : `the Gateway now uses ${configText(current)} instead of ${configText(recorded)}`);
  }
  if (recorded.gatewayGeneration !== current.gatewayGeneration) out.push(`the Gateway moved from generation ${recorded.gatewayGeneration} to ${current.gatewayGeneration}`);
  if (recorded.templateHash !== current.templateHash) out.push("the controller's LB template changed");
  return out;
}

function queuedSentence(f: ExplainFacts, applied: Condition, recorded: AppliedState | null, current: AppliedState | null, ours: Deployment | null): { sentence: string; line?: BudgetVerdict } {
  const what = current ?? recorded;
  const subject = what ? configText(what) : 'The latest GatewayConfiguration';
  const configuration = f.observed.gatewayConfiguration;
  let place = '';
  let line: BudgetVerdict | undefined;
  if (f.census !== undefined && f.rolloutBudget > 0 && f.templateHash !== undefined) {
    line = rolloutBudget(f.observed.gateway, f.rolloutBudget, f.census, { templateHash: f.templateHash, configuration }, f.controllerName);
    const held = line.held.map((h) => `${h.ref}: ${h.state === 'stuck' ? 'stuck, progress deadline exceeded' : 'rolling'}`);
    place = `, #${line.ahead.length + 1} in line; ${held.length === 0 ? 'no slot held' : `${plural(held.length, 'slot', 'slots')} held (${held.join('; ')})`}`;
  }
  const budget = f.rolloutBudget > 0 ? ` (${f.rolloutBudget} at once)` : '';
  return { sentence: `${subject} is not applied${forHowLong(applied, f.now)}: its LB rollout waits for the rollout budget${budget}${place}; ${keeps(recorded, current, ours)}`, ...(line && { line }) };
}

function rolloutSentence(d: Deployment, subject: string, f: ExplainFacts): { state: ExplainState; sentence: string } {
  const state = rolloutState(d);
  const ref = refOf(d.metadata);
  const desired = d.spec.replicas ?? 1;
  const available = d.status?.availableReplicas ?? 0;
  const updated = d.status?.updatedReplicas ?? 0;
  if (state === 'stuck') {
    const p = progressingCondition(d);
    const since = age(p?.lastTransitionTime ?? p?.lastUpdateTime, f.now);
    const old = (d.status?.replicas ?? 0) - updated;
    const serving = old > 0 ? `, ${plural(old, 'old replica', 'old replicas')} still there` : '';
    return { state, sentence: `${subject} is applied to Deployment ${ref}, but its LB rollout is stuck${since ? ` for ${since}` : ''}: ${rolloutStatus(d).message}; ${updated}/${desired} replicas updated, ${available} available${serving}` };
  }
  if (state === 'rolling') return { state, sentence: `${subject} is applied to Deployment ${ref}; its LB rollout is in progress: ${rolloutStatus(d).message}` };
  if (state === 'degraded') return { state, sentence: `${subject} is applied to Deployment ${ref}, but only ${available}/${desired} LB replicas are available (no rollout in progress)` };
  return { state: 'applied', sentence: `${subject} is applied: Deployment ${ref} runs it, ${available}/${desired} LB replicas available` };
}

export function answer(f: ExplainFacts): Answer {
  const { gateway, gatewayClass, gatewayConfiguration, deployment } = f.observed;
  const gw = `Gateway ${refOf(gateway.metadata)}`;
  const ours = deployment !== null && isControlledBy(deployment, gateway) ? deployment : null;
  const recorded = readAppliedState(ours);
  const current = gatewayConfiguration !== null && f.templateHash !== undefined ? currentState(gateway, gatewayConfiguration, f.templateHash) : null;
  const base = { recorded, current };
  const className = gateway.spec.gatewayClassName;
  if (gatewayClass === null || gatewayClass.metadata.name !== className) {
    return { ...base, state: 'not-ours', sentence: `${gw} is not reconciled by ${f.controllerName}: its GatewayClass ${className} does not exist` };
  }
  if (gatewayClass.spec.controllerName !== f.controllerName) {
    return { ...base, state: 'not-ours', sentence: `${gw} is not reconciled by ${f.controllerName}: its GatewayClass ${className} belongs to controller ${gatewayClass.spec.controllerName}` };
  }
  const conditions = gateway.status?.conditions ?? [];
  const accepted = findCondition(conditions, CONDITION_ACCEPTED);
  const applied = findCondition(conditions, CONDITION_APPLIED);
  if (accepted?.status === 'False') {
    return { ...base, state: 'invalid', sentence: `${gw} is not accepted${forHowLong(accepted, f.now)}: ${accepted.message ?? accepted.reason}; ${keeps(recorded, current, ours)}` };
  }
  if (deployment !== null && ours === null) {
    const c = controllerOf(deployment);
    const who = c === undefined ? 'no controller' : `${c.kind}/${c.name}${c.kind === 'Gateway' && c.name === gateway.metadata.name ? ` (uid ${c.uid}, an earlier Gateway of this name)` : ''}`;
    return { ...base, state: 'collision', sentence: `${gw} is not programmed: Deployment ${refOf(deployment.metadata)} exists but is controlled by ${who}, not by this Gateway; it is not adopted or changed` };
  }
  if (accepted?.status !== 'True' || accepted.message !== acceptedMessage(f.controllerName) || applied === undefined) {
    return { ...base, state: 'not-reconciled', sentence: `${gw} has no verdict from ${f.controllerName} yet: no reconcile has reported on it` };
  }
  const subject = current ? configText(current) : recorded ? configText(recorded) : 'The latest GatewayConfiguration';
  if (applied.status === 'False' && applied.reason === ROLLOUT_QUEUED) return { ...base, state: 'queued', ...queuedSentence(f, applied, recorded, current, ours) };
  if (applied.status === 'False') {
    const error = writeError(applied);
    const cause = error !== undefined ? failurePhrase(error) : applied.reason === 'RetriesExhausted' ? 'delivery retries were exhausted' : (applied.message ?? applied.reason);
    const dead = deadLettered(f.events, gateway.metadata.name);
    const deadText = dead > 0 ? `, ${dead === 1 ? '1 delivery' : `${dead} deliveries`} dead-lettered` : '';
    const state: ExplainState = applied.reason === 'RetriesExhausted' ? 'retries-exhausted' : 'apply-failed';
    return { ...base, state, sentence: `${subject} is not applied${forHowLong(applied, f.now)}: ${cause}${deadText}; ${keeps(recorded, current, ours)}` };
  }
  if (ours === null) return { ...base, state: 'not-reconciled', sentence: `${gw} has no LB Deployment yet: the next reconcile creates it` };
  if (current !== null && !sameState(recorded, current)) {
    const why = recorded === null ? ['the Deployment records no inputs'] : changes(recorded, current);
    return { ...base, state: 'pending', sentence: `${subject} is not applied yet: ${why.join(', ')}, and no reconcile has written it since; ${keeps(recorded, current, ours)}` };
  }
  return { ...base, ...rolloutSentence(ours, subject, f) };
}
