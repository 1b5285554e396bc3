import { classifyError, type ClassifiedError } from '../kube/classify-error.js';
import { afterDeploymentWriteFailure, afterGatewayFailure, afterStatusWriteFailure, combine, MAX_CONFLICT_ATTEMPTS, type Delivery, type InvocationResult } from '../kube/retry-policy.js';
import { conditionTime } from './plan/conditions.js';
import type { KubeApi } from '../kube/kube-api.js';
import { observe } from './observe.js';
import type { ObserveReads } from './shared-reads.js';
import type { ObserveHint } from '../../events/observe-hint.js';
import { plan, planStatus } from './plan/plan.js';
import { observedBehindRecord, readAppliedState } from './plan/applied-annotations.js';
import type { LbPdbSetting, Observed, Outcome, PlanInput, PlannedEvent, Settings, SettledPlan, WriteOutcome } from './plan/plan-types.js';
import { pdbAction, pdbEvent } from './plan/render-pdb.js';
import type { Deployment } from '../../api/schemas.js';
import { recordEvent, recordEventOnce } from './record-event.js';
import { planRouteFeedback } from './plan/route-feedback.js';
import { readRolloutCensus, type CensusScope } from './rollout-census.js';
import type { Template } from './template.js';
import { nextInLine } from './plan/rollout-budget.js';
import type { GatewayKey } from '../../api/gateway-key.js';

// The imperative shell around the pure planner: observe → plan → write the
// Deployment → plan status from the write's outcome → write status → Events,
// for exactly one Gateway. Everything it knows it reads from the API server in
// this invocation; nothing is remembered between invocations. What follows a
// failure (observe again, deliver again, settle) is the retry policy's word
// alone (kube/retry-policy.ts).

export interface ReconcileDeps {
  api: KubeApi;
  template: Template;
  settings: Settings;
  clock: () => Date;
  /** Names this replica in Events. */
  instance: string;
  /** The watched namespaces (empty: all): where the rollout census lists. */
  namespaces?: readonly string[];
}

export interface ReconcileResult extends InvocationResult<Outcome> {
  deploymentWritten: boolean;
  /**
   * The Gateway left the rollout line (or freed its slot) without starting a
   * rollout: the next in line, to be reconciled now (reconcile-targets.ts).
   */
  wake?: GatewayKey[];
  /** The LB Deployment's PodDisruptionBudget was created or updated (LB_PDB_MAX_UNAVAILABLE). */
  pdbWritten: boolean;
  eventsWritten: number;
}

/** A conflict cut the attempt short: observe again (or give up, as the policy says). */
class Conflict extends Error {}

export interface ReconcileOptions {
  /** Set by the dead-letter path. */
  retriesExhausted?: { message: string };
  /** What the event says the Gateway names: read in the first round (observe.ts). */
  hint?: ObserveHint;
  /**
   * What the first attempt observes through: the reads a batch's Gateways
   * share (shared-reads.ts). Later attempts, after a conflict, read afresh.
   */
  firstReads?: ObserveReads;
}

type AttemptResult = Omit<ReconcileResult, 'attempts'>;

export async function reconcile(key: { namespace: string; name: string }, deps: ReconcileDeps, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  for (let attempts = 1; ; attempts++) {
    // Each attempt reports only what happened in it: a 503 from an attempt
    // that a conflict cut short must not outlive a later attempt that found
    // everything in order.
    const result: AttemptResult = { outcome: 'error', next: 'settle', deploymentWritten: false, pdbWritten: false, statusWritten: false, eventsWritten: 0 };
    try {
      await attempt(key, deps, attempts === 1 ? options : { ...options, firstReads: undefined }, result);
      return { ...result, attempts };
    } catch (err) {
      const c: ClassifiedError | undefined = err instanceof Conflict ? { class: 'conflict', message: err.message } : classifyError(err);
      if (!c) throw err;
      const next = afterGatewayFailure(c, attempts);
      if (next === 'reobserve') continue;
      // Reads failed, or a conflict would not settle: nothing was decided.
      const error: ClassifiedError = c.class === 'conflict' ? { class: 'transient', message: `still conflicting after ${MAX_CONFLICT_ATTEMPTS} attempts: ${c.message}` } : c;
      return { ...result, outcome: 'error', next, error, attempts };
    }
  }
}

/** Runs a write; a conflict ends the attempt, another API failure is returned classified. */
async function write<T>(request: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: ClassifiedError & { class: Exclude<ClassifiedError['class'], 'conflict'> } }> {
  try {
    return { ok: true, value: await request() };
  } catch (err) {
    const c = classifyError(err);
    if (!c) throw err;
    if (c.class === 'conflict') throw new Conflict(c.message);
    return { ok: false, error: { ...c, class: c.class } };
  }
}

async function attempt(key: { namespace: string; name: string }, deps: ReconcileDeps, options: ReconcileOptions, result: AttemptResult): Promise<void> {
  const now = deps.clock();
  const pdbSetting = deps.settings.lbPodDisruptionBudget;
  const observed = await observe(options.firstReads ?? deps.api, key, options.hint, { pdb: pdbSetting !== undefined });
  if (observedBehindRecord(readAppliedState(observed.deployment), observed.gateway, observed.gatewayConfiguration)) {
    throw new Conflict('the Deployment records newer inputs than this observation read: observing again');
  }
  const input: PlanInput = { template: deps.template, settings: deps.settings, ...(options.retriesExhausted ? { retriesExhausted: options.retriesExhausted } : {}) };
  let first = plan(observed, input, conditionTime(now));
  if (first.outcome === 'needs-reads') {
    // The planner asked: a pod-template change the rollout budget must judge.
    const census = await readRolloutCensus(deps.api, { ...censusScope(deps), ...(first.configurationLine && { configurationLine: first.configurationLine }) });
    first = plan({ ...observed, rollouts: census }, input, conditionTime(now));
    if (first.outcome === 'needs-reads') throw new Error('the planner asked for the rollout census twice');
  }
  let settled: SettledPlan;
  let next: Delivery = 'settle';
  let liveDeployment = observed.deployment;
  if (first.outcome === 'needs-write') {
    const { action, object } = first.deployment;
    const r = await write(() => (action === 'create' ? deps.api.createDeployment(key.namespace, object) : deps.api.replaceDeployment(key.namespace, object)));
    let outcome: WriteOutcome;
    if (r.ok) {
      result.deploymentWritten = true;
      liveDeployment = r.value;
      outcome = { ok: true, written: r.value };
    } else {
      const verdict = afterDeploymentWriteFailure(r.error.class, action);
      outcome = { ok: false, failure: { class: verdict.failureClass, ...(r.error.code !== undefined ? { code: r.error.code } : {}), message: r.error.message } };
      result.error = r.error;
      next = verdict.next;
    }
    settled = planStatus(first.pending, outcome);
  } else {
    settled = first;
  }
  result.outcome = settled.outcome;
  if (settled.deployment.action === 'record-index') {
    // Before the status and the wake: a Gateway leaving the line is out of
    // the census that wakes the next. Best effort: the next reconcile (or
    // the resync) patches it again.
    try {
      await deps.api.labelDeployment(key.namespace, settled.deployment.name, settled.deployment.labels);
    } catch (err) {
      if (!classifyError(err)) throw err;
    }
  }
  if (settled.outcome === 'not-found') {
    await recordRouteFeedback(observed, deps, now, result);
    return;
  }

  if (settled.deployment.action === 'record-admission') {
    // Best effort: if it fails, the next reconcile writes the render again and
    // records then.
    try {
      await deps.api.annotateDeployment(key.namespace, settled.deployment.name, settled.deployment.annotations);
    } catch (err) {
      if (!classifyError(err)) throw err;
    }
  }

  const gateway = observed.gateway;
  const status = settled.status;
  if (gateway && status && settled.statusChanged) {
    const r = await write(() =>
      deps.api.replaceGatewayStatus({
        ...gateway,
        status: { ...gateway.status, conditions: status.conditions, addresses: status.addresses.map((a) => ({ ...a })), ...(status.listeners ? { listeners: status.listeners } : {}) },
      }),
    );
    if (r.ok) result.statusWritten = true;
    else {
      result.error ??= r.error;
      next = combine(next, afterStatusWriteFailure(r.error));
    }
  }
  result.next = next;

  const record = async (ev: PlannedEvent): Promise<void> => {
    if (!gateway) return;
    const r = await recordEvent(deps.api, gateway, ev, { controllerName: deps.settings.controllerName, instance: deps.instance, now });
    if (r.ok) result.eventsWritten++;
  };
  for (const ev of settled.events) await record(ev);

  // Last, once the Deployment, the status and their Events are done: a
  // conflict on the PDB observes again without losing any of them.
  if (pdbSetting !== undefined && settled.outcome !== 'not-ours') {
    const r = await writePdb(deps, observed, liveDeployment, pdbSetting, result.deploymentWritten || settled.statusChanged);
    if (r.written) result.pdbWritten = true;
    if (r.error) {
      result.error ??= r.error;
      result.next = combine(result.next, r.error.next);
    }
    if (r.event) await record(r.event);
  }
  await recordRouteFeedback(observed, deps, now, result);
  if (settled.wakeNext && result.statusWritten) result.wake = await whoIsNext(deps, key);
}

/**
 * The Gateway left the rollout line without starting a rollout, and its
 * status now says so: the first of the line, one per free slot, from a
 * census read after that status write. Best effort: a census that cannot be
 * read wakes no one, and the resync moves the line (docs/design.md §12).
 */
async function whoIsNext(deps: ReconcileDeps, key: GatewayKey): Promise<GatewayKey[]> {
  const budget = deps.settings.rolloutBudget ?? 0;
  if (budget <= 0) return [];
  try {
    const census = await readRolloutCensus(deps.api, censusScope(deps));
    return nextInLine(budget, census, deps.template.hash, deps.settings.controllerName, `${key.namespace}/${key.name}`).map((ref) => {
      const slash = ref.indexOf('/');
      return { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
    });
  } catch (err) {
    if (!classifyError(err)) throw err;
    return [];
  }
}

function censusScope(deps: ReconcileDeps): CensusScope {
  return { namespaces: deps.namespaces ?? [], controllerName: deps.settings.controllerName, templateHash: deps.template.hash, budget: deps.settings.rolloutBudget ?? 0 };
}

/** Warnings on the routes that name this key and do not attach (route-feedback.ts); each said once. */
async function recordRouteFeedback(observed: Observed, deps: ReconcileDeps, now: Date, result: AttemptResult): Promise<void> {
  for (const { regarding, event } of planRouteFeedback(observed, deps.settings.controllerName)) {
    const r = await recordEventOnce(deps.api, regarding, event, { controllerName: deps.settings.controllerName, instance: deps.instance, now });
    if (r.written) result.eventsWritten++;
  }
}

/**
 * The PodDisruptionBudget of the LB Deployment as live after this attempt's
 * write (render-pdb.ts). Its failure does not change the Gateway's status
 * (the Deployment is what status reports); it is a Warning Event, and a
 * failure that may heal is delivered again. A PDB of our name that this
 * Gateway does not control is reported only when this reconcile writes
 * something else, so that a standing collision costs no write on a no-op.
 */
async function writePdb(
  deps: ReconcileDeps,
  observed: Observed,
  deployment: Deployment | null,
  setting: LbPdbSetting,
  acting: boolean,
): Promise<{ event?: PlannedEvent; written?: true; error?: ClassifiedError & { next: Delivery } }> {
  const gateway = observed.gateway;
  if (!gateway) return {};
  const action = pdbAction(gateway, deployment, observed.pdb ?? null, setting);
  if (action.action === 'none') return {};
  const ref = `${observed.key.namespace}/${deployment?.metadata.name ?? ''}`;
  if (action.action === 'collision') return acting ? { event: pdbEvent(action, ref) } : {};
  const namespace = observed.key.namespace;
  const r = await write(() => (action.action === 'create' ? deps.api.createPodDisruptionBudget(namespace, action.object) : deps.api.replacePodDisruptionBudget(namespace, action.object)));
  if (r.ok) return { event: pdbEvent(action, ref), written: true };
  // As for the Deployment: a create refused for good waits for a change; anything else comes again.
  return { event: pdbEvent(action, ref, r.error), error: { ...r.error, next: afterDeploymentWriteFailure(r.error.class, action.action).next } };
}
