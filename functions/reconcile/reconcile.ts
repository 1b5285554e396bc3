import { classifyError, type ClassifiedError } from '../kube/classify-error.js';
import { afterDeploymentWriteFailure, afterGatewayFailure, MAX_CONFLICT_ATTEMPTS, type InvocationResult } from '../kube/retry-policy.js';
import { conditionTime } from './plan/conditions.js';
import type { KubeApi } from '../kube/kube-api.js';
import { observe } from './observe.js';
import type { ObserveHint } from '../../events/observe-hint.js';
import { plan } from './plan/plan.js';
import type { Observed, Outcome, Plan, WriteFailure } from './plan/plan-types.js';
import { recordEvent } from './record-event.js';
import type { Settings } from './plan/render-deployment.js';
import type { Deployment } from '../../api/schemas.js';
import type { Template } from './template.js';

// The imperative shell around the pure planner: observe → plan → apply →
// report, for exactly one Gateway. Everything it knows it reads from the API
// server in this invocation; nothing is remembered between invocations.

export interface ReconcileDeps {
  api: KubeApi;
  template: Template;
  settings: Settings;
  clock: () => Date;
  /** Names this replica in Events. */
  instance: string;
}

export interface ReconcileResult extends InvocationResult<Outcome> {
  deploymentWritten: boolean;
  eventsWritten: number;
}

class ConflictRetry extends Error {}

export interface ReconcileOptions {
  /** Set by the dead-letter path. */
  retriesExhausted?: { message: string };
  /** What the event says the Gateway names: read in the first round (observe.ts). */
  hint?: ObserveHint;
}

type AttemptResult = Omit<ReconcileResult, 'attempts'>;

export async function reconcile(
  key: { namespace: string; name: string },
  deps: ReconcileDeps,
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  for (let attempts = 1; ; attempts++) {
    // Each attempt reports only what happened in it: a 503 from an attempt
    // that a conflict cut short must not outlive a later attempt that found
    // everything in order.
    const result: AttemptResult = { outcome: 'error', retry: false, deploymentWritten: false, statusWritten: false, eventsWritten: 0 };
    try {
      await attempt(key, deps, options, result);
      return { ...result, attempts };
    } catch (err) {
      const c: ClassifiedError | undefined = err instanceof ConflictRetry ? { class: 'conflict', message: err.message } : classifyError(err);
      if (!c) throw err;
      const next = afterGatewayFailure(c, attempts);
      if (next === 'reobserve') continue;
      // Reads failed, or a conflict would not settle: nothing was decided.
      const error: ClassifiedError = c.class === 'conflict' ? { class: 'transient', message: `still conflicting after ${MAX_CONFLICT_ATTEMPTS} attempts: ${c.message}` } : c;
      return { ...result, outcome: 'error', retry: next === 'redeliver', error, attempts };
    }
  }
}

async function attempt(
  key: { namespace: string; name: string },
  deps: ReconcileDeps,
  options: ReconcileOptions,
  result: AttemptResult,
): Promise<void> {
  const now = deps.clock();
  const observed: Observed = {
    ...(await observe(deps.api, key, { template: deps.template, settings: deps.settings, now: conditionTime(now) }, options.hint)),
    ...(options.retriesExhausted ? { retriesExhausted: options.retriesExhausted } : {}),
  };
  let final: Plan = plan(observed);
  result.outcome = final.outcome;
  if (final.outcome === 'not-found') return;

  const action = final.deployment;
  if (action.action === 'create' || action.action === 'update') {
    let written: Deployment | undefined;
    let failure: WriteFailure | undefined;
    try {
      written = action.action === 'create'
        ? await deps.api.createDeployment(key.namespace, action.object)
        : await deps.api.replaceDeployment(key.namespace, action.object);
      result.deploymentWritten = true;
    } catch (err) {
      const c = classifyError(err);
      if (!c) throw err;
      if (c.class === 'conflict') throw new ConflictRetry(c.message);
      const verdict = afterDeploymentWriteFailure(c.class, action.action);
      failure = { class: verdict.failureClass, ...(c.code !== undefined ? { code: c.code } : {}), message: c.message };
      result.error = c;
      result.retry = verdict.next === 'redeliver';
    }
    final = plan(
      written
        ? { ...observed, deployment: written, write: { ok: true, before: observed.deployment } }
        : { ...observed, write: { ok: false, failure: failure as WriteFailure } },
    );
    result.outcome = final.outcome;
  }

  if (final.deployment.action === 'record-admission') {
    // Best effort: if it fails, the next reconcile writes the render again and
    // records then.
    try {
      await deps.api.annotateDeployment(key.namespace, final.deployment.name, final.deployment.annotations);
    } catch (err) {
      if (!classifyError(err)) throw err;
    }
  }

  const gateway = observed.gateway;
  if (gateway && final.status && final.statusChanged) {
    try {
      await deps.api.replaceGatewayStatus({ ...gateway, status: { ...gateway.status, conditions: final.status.conditions, addresses: final.status.addresses.map((a) => ({ ...a })), ...(final.status.listeners ? { listeners: final.status.listeners } : {}) } });
      result.statusWritten = true;
    } catch (err) {
      const c = classifyError(err);
      if (!c) throw err;
      if (c.class === 'conflict') throw new ConflictRetry(c.message);
      result.error ??= c;
      result.retry = true;
    }
  }

  if (gateway) {
    for (const ev of final.events) {
      const r = await recordEvent(deps.api, gateway, ev, { controllerName: deps.settings.controllerName, instance: deps.instance, now });
      if (r.ok) result.eventsWritten++;
    }
  }
}
