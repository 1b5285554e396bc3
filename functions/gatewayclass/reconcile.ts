// The imperative shell of the GatewayClass reconcile: observe → plan → apply
// for exactly one GatewayClass, the same shape as the Gateway's. It writes
// the status subresource at most once, and only when the plan differs from
// what is stored.
import { classifyError } from '../kube/classify-error.js';
import { afterClassFailure, type InvocationResult } from '../kube/retry-policy.js';
import { conditionTime } from '../reconcile/plan/conditions.js';
import type { KubeApi } from '../kube/kube-api.js';
import { classParametersRef, readableRef } from '../reconcile/plan/parameters-ref.js';
import type { Deployment } from '../../api/schemas.js';
import { planClass, type ClassObserved, type ClassOutcome } from './plan.js';
import { BUNDLE_VERSION_ANNOTATION, GATEWAY_CLASS_CRD } from './supported.js';

export interface ClassReconcileDeps {
  api: KubeApi;
  controllerName: string;
  template: Deployment;
  clock: () => Date;
}

export interface ClassReconcileResult extends InvocationResult<ClassOutcome> {
  name: string;
}

export async function observeClass(name: string, deps: ClassReconcileDeps): Promise<ClassObserved> {
  const base = { name, controllerName: deps.controllerName, template: deps.template, now: conditionTime(deps.clock()) };
  const gatewayClass = await deps.api.getGatewayClass(name);
  // Nothing else is worth a read for a class that is not ours.
  if (gatewayClass === null || gatewayClass.spec.controllerName !== deps.controllerName) {
    return { ...base, gatewayClass, configuration: null, bundleVersion: undefined };
  }
  const ref = classParametersRef(gatewayClass);
  const [configuration, crd] = await Promise.all([
    readableRef(ref) ? deps.api.getGatewayConfiguration(ref.namespace, ref.name) : Promise.resolve(null),
    deps.api.getCrdMetadata(GATEWAY_CLASS_CRD),
  ]);
  return { ...base, gatewayClass, configuration, bundleVersion: crd?.annotations?.[BUNDLE_VERSION_ANNOTATION] };
}

export async function reconcileClass(name: string, deps: ClassReconcileDeps): Promise<ClassReconcileResult> {
  const result: ClassReconcileResult = { name, outcome: 'error', statusWritten: false, next: 'settle', attempts: 0 };
  for (;;) {
    result.attempts++;
    try {
      const observed = await observeClass(name, deps);
      const plan = planClass(observed);
      result.outcome = plan.outcome;
      if (plan.status && plan.statusChanged && observed.gatewayClass) {
        const gc = observed.gatewayClass;
        await deps.api.replaceGatewayClassStatus({ ...gc, status: { ...gc.status, conditions: plan.status.conditions, supportedFeatures: plan.status.supportedFeatures } });
        result.statusWritten = true;
      }
      return result;
    } catch (err) {
      const c = classifyError(err);
      if (!c) throw err;
      // Someone wrote in between: observe again, a bounded number of times.
      const next = afterClassFailure(c, result.attempts);
      if (next === 'reobserve') continue;
      result.outcome = 'error';
      result.error = c;
      result.next = next;
      return result;
    }
  }
}
