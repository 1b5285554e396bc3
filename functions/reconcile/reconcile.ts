import { classifyError, type ClassifiedError } from '../kube/classify-error.js';
import { afterDeploymentWriteFailure, afterGatewayFailure, afterStatusWriteFailure, combine, MAX_CONFLICT_ATTEMPTS, type Delivery, type InvocationResult } from '../kube/retry-policy.js';
import { conditionTime } from './plan/conditions.js';
import type { KubeApi } from '../kube/kube-api.js';
import { observe } from './observe.js';
import type { ObserveHint } from '../../events/observe-hint.js';
import { plan, planStatus } from './plan/plan.js';
import { observedBehindRecord, readAppliedState } from './plan/applied-annotations.js';
import type { Outcome, PlanInput, Settings, SettledPlan, WriteOutcome } from './plan/plan-types.js';
import { recordEvent } from './record-event.js';
import { readRolloutCensus } from './rollout-census.js';
import type { Template } from './template.js';

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
  eventsWritten: number;
}

/** A conflict cut the attempt short: observe again (or give up, as the policy says). */
class Conflict extends Error {}

export interface ReconcileOptions {
  /** Set by the dead-letter path. */
  retriesExhausted?: { message: string };
  /** What the event says the Gateway names: read in the first round (observe.ts). */
  hint?: ObserveHint;
}

type AttemptResult = Omit<ReconcileResult, 'attempts'>;

export async function reconcile(key: { namespace: string; name: string }, deps: ReconcileDeps, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  for (let attempts = 1; ; attempts++) {
    // Each attempt reports only what happened in it: a 503 from an attempt
    // that a conflict cut short must not outlive a later attempt that found
    // everything in order.
    const result: AttemptResult = { outcome: 'error', next: 'settle', deploymentWritten: false, statusWritten: false, eventsWritten: 0 };
    try {
      await attempt(key, deps, options, result);
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
  const observed = await observe(deps.api, key, options.hint);
  if (observedBehindRecord(readAppliedState(observed.deployment), observed.gateway, observed.gatewayConfiguration)) {
    throw new Conflict('the Deployment records newer inputs than this observation read: observing again');
  }
  const input: PlanInput = { template: deps.template, settings: deps.settings, ...(options.retriesExhausted ? { retriesExhausted: options.retriesExhausted } : {}) };
  let first = plan(observed, input, conditionTime(now));
  if (first.outcome === 'needs-reads') {
    // The planner asked: a pod-template change the rollout budget must judge.
    const census = await readRolloutCensus(deps.api, deps.namespaces ?? []);
    first = plan({ ...observed, rollouts: census }, input, conditionTime(now));
    if (first.outcome === 'needs-reads') throw new Error('the planner asked for the rollout census twice');
  }
  let settled: SettledPlan;
  let next: Delivery = 'settle';
  if (first.outcome === 'needs-write') {
    const { action, object } = first.deployment;
    const r = await write(() => (action === 'create' ? deps.api.createDeployment(key.namespace, object) : deps.api.replaceDeployment(key.namespace, object)));
    let outcome: WriteOutcome;
    if (r.ok) {
      result.deploymentWritten = true;
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
  if (settled.outcome === 'not-found') return;

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

  if (gateway) {
    for (const ev of settled.events) {
      const r = await recordEvent(deps.api, gateway, ev, { controllerName: deps.settings.controllerName, instance: deps.instance, now });
      if (r.ok) result.eventsWritten++;
    }
  }
}
