import { keyText, type GatewayKey } from '../api/gateway-key.js';
import type { ObserveHint } from '../events/observe-hint.js';
import { coalescer, type Coalescer } from './coalescer.js';
import { fanOut } from './dispatch/fan-out.js';
import type { Target } from './dispatch/target.js';
import { reconcileClass, type ClassReconcileResult } from './gatewayclass/reconcile.js';
import type { HandlerDeps, Handled, ReconcileCaller } from './handler-types.js';
import { handOverBy, type Invocation } from './invocation.js';
import type { ClassifiedError } from './kube/classify-error.js';
import type { KubeApi } from './kube/kube-api.js';
import { afterDeadLetter, afterFanOut, combine, type Delivery, type FanOutOrigin } from './kube/retry-policy.js';
import { reconcile, type ReconcileResult } from './reconcile/reconcile.js';

// The last steps of an invocation: reconciling the Gateways and GatewayClasses
// it decided on, and folding their (result, next step) pairs into one.

export const errorText = (e: ClassifiedError): string => `${e.class}${e.code ? ` ${e.code}` : ''}: ${e.message}`;

/** A coalescer for HandlerDeps.coalescer: one per process. */
export const reconcileCoalescer = (): Coalescer<ReconcileResult, ReconcileCaller> => coalescer<ReconcileResult, ReconcileCaller>();

/** The invocation as a reconcile sees it: its deadline, its API client bound to its signal, its telemetry. */
export const callerOf = (invocation: Invocation, api: KubeApi): ReconcileCaller => ({ deadline: invocation.deadline, api, telemetry: invocation.telemetry });

function fromReconcile(key: GatewayKey, r: ReconcileResult): Handled {
  return { next: r.next, outcome: r.outcome, gateway: keyText(key), ...(r.error ? { detail: errorText(r.error) } : {}) };
}

// A run may answer several invocations (coalescer.ts): it works for the one
// that waits longest, so an invocation that has answered 503 has no run left
// writing on its behalf once the others have answered too.
function reconcileCoalesced(key: GatewayKey, hint: ObserveHint | undefined, caller: ReconcileCaller, deps: HandlerDeps): Promise<ReconcileResult> {
  return deps.coalescer.run(keyText(key), caller, (run) => run.telemetry.reconcile('Gateway', keyText(key), () => reconcile(key, { ...deps.reconcile, api: run.api }, hint ? { hint } : {})));
}

/**
 * One Gateway, in this invocation. A Gateway that left the rollout line
 * (another class, invalid, no longer behind) without starting a rollout
 * names the next in line (docs/design.md §12): they are reconciled now, by
 * the same event, as any event's targets (fanned out with a sink). Best
 * effort: its outcome changes no answer (a redelivery would find the
 * Gateway out of the line already and wake no one), the resync is the
 * backstop.
 */
export async function reconcileTarget({ key, hint }: Target, invocation: Invocation, caller: ReconcileCaller, deps: HandlerDeps): Promise<Handled> {
  const r = await reconcileCoalesced(key, hint, caller, deps);
  const handled = fromReconcile(key, r);
  if (!r.wake || r.wake.length === 0) return handled;
  // Handed over even when one: this invocation reconciles its own Gateway only.
  const woken = await handOver(r.wake.map((k) => ({ key: k })), invocation, caller, deps, 'event');
  return { ...handled, woke: r.wake.map(keyText).join(','), ...(handled.detail === undefined && woken.detail !== undefined && { detail: `waking the next in line: ${woken.detail}` }) };
}

/** A dead-lettered reconcile request: RetriesExhausted is recorded on its Gateway. */
export async function reconcileDeadLetter(key: GatewayKey, error: { code: number | undefined; destination: string | undefined; data: string | undefined }, caller: ReconcileCaller, deps: HandlerDeps): Promise<Handled> {
  const message = `last delivery${error.destination ? ` to ${error.destination}` : ''} answered ${error.code ?? 'no status'}${error.data ? `: ${error.data}` : ''}`;
  // Not coalesced with plain reconciles: it must run with what it knows.
  const r = await caller.telemetry.reconcile('Gateway', keyText(key), () => reconcile(key, { ...deps.reconcile, api: caller.api }, { retriesExhausted: { message } }));
  caller.telemetry.deadLetter(r.outcome);
  return { ...fromReconcile(key, r), next: afterDeadLetter(r.error, r.outcome === 'error'), outcome: `dead-letter:${r.outcome}` };
}

/**
 * Several Gateways: fanned out, one reconcile request each, when there is a
 * sink; reconciled here otherwise. One Gateway is reconciled here, no extra
 * hop. `origin`: a resync pass leaves what it could not hand over to the next
 * pass; an API event is delivered again for it (retry-policy.ts).
 */
export async function reconcileTargets(targets: Target[], invocation: Invocation, caller: ReconcileCaller, deps: HandlerDeps, origin: FanOutOrigin): Promise<Handled> {
  if (targets.length === 0) return { next: 'settle', outcome: 'no-gateway-affected', gateways: 0 };
  const [only] = targets;
  if (targets.length === 1 && only) return reconcileTarget(only, invocation, caller, deps);
  return handOver(targets, invocation, caller, deps, origin);
}

/** Fanned out, one reconcile request each, when there is a sink; reconciled here otherwise. */
async function handOver(targets: Target[], invocation: Invocation, caller: ReconcileCaller, deps: HandlerDeps, origin: FanOutOrigin): Promise<Handled> {
  if (deps.sink) {
    const token = await deps.sinkToken?.();
    const r = await fanOut(targets, { ...invocation.cause }, { sink: deps.sink, handOverBy: handOverBy(invocation), telemetry: invocation.telemetry, ...(token ? { token } : {}), ...(deps.sinkClient ? { client: deps.sinkClient } : {}) });
    const next = afterFanOut(r.failed.length, r.unsent, origin);
    if (r.failed.length > 0) return { next, outcome: 'fan-out-failed', gateways: targets.length, detail: `${r.failed.length} of ${targets.length} not delivered: ${r.failed[0]?.error}` };
    if (r.unsent > 0) {
      const rest = origin === 'resync' ? 'the next pass reconciles the rest' : 'delivered again for the rest';
      return { next, outcome: 'fanned-out-partly', gateways: targets.length, detail: `${r.sent} of ${targets.length} handed over before the invocation's time ran out; ${rest}` };
    }
    return { next, outcome: 'fanned-out', gateways: targets.length };
  }
  let index = 0;
  const nexts: Delivery[] = [];
  const worker = async (): Promise<void> => {
    while (index < targets.length) nexts.push((await reconcileTarget(targets[index++] as Target, invocation, caller, deps)).next);
  };
  await Promise.all(Array.from({ length: Math.min(deps.localConcurrency ?? 4, targets.length) }, worker));
  const next = combine(...nexts);
  return { next, outcome: next === 'redeliver' ? 'some-need-retry' : 'reconciled-locally', gateways: targets.length };
}

/** One reconcile per class, in this invocation: classes are few. */
export async function reconcileClasses(names: readonly string[], caller: ReconcileCaller, deps: HandlerDeps): Promise<ClassReconcileResult[]> {
  const r = deps.reconcile;
  const classDeps = { api: caller.api, controllerName: r.settings.controllerName, template: r.template.deployment, clock: r.clock };
  const results: ClassReconcileResult[] = [];
  for (const name of names) results.push(await caller.telemetry.reconcile('GatewayClass', name, () => reconcileClass(name, classDeps)));
  return results;
}

/**
 * GatewayClass reconciles ride along with the Gateway ones of the same event;
 * one that needs another delivery makes the whole answer a redelivery.
 */
export function withClasses(classes: ClassReconcileResult[], handled: Handled): Handled {
  if (classes.length === 0) return handled;
  const failed = classes.find((c) => c.next === 'redeliver');
  return {
    ...handled,
    next: combine(handled.next, ...classes.map((c) => c.next)),
    classes: classes.map((c) => `${c.name}:${c.outcome}`).join(','),
    ...(failed?.error ? { detail: `GatewayClass ${failed.name}: ${errorText(failed.error)}` } : {}),
  };
}
