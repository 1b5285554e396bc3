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
import { sharedReads, type ObserveReads } from './reconcile/shared-reads.js';

// The last steps of an invocation: reconciling the Gateways and GatewayClasses
// it decided on, and folding their (result, next step) pairs into one.

/**
 * Gateways of one namespace per fan-out request at most; a fan-out small
 * enough to have every request in flight at once still sends one per Gateway
 * (fan-out.ts batchSize). A batch reads its class,
 * GatewayConfiguration and routes once instead of once per Gateway, and
 * reconciles its Gateways one after another, so that a Pod still has at
 * most containerConcurrency reconciles in flight (infra/knative/service.yaml).
 * Small enough that a batch redelivered for one Gateway's failure costs its
 * in-sync neighbours little (their reconcile writes nothing).
 */
export const FAN_OUT_BATCH = 10;

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
// The shared reads of a batch are this invocation's: a run that waited in
// line answers later requests too, and reads for itself.
function reconcileCoalesced(key: GatewayKey, hint: ObserveHint | undefined, caller: ReconcileCaller, deps: HandlerDeps, shared: ObserveReads | undefined): Promise<ReconcileResult> {
  return deps.coalescer.run(keyText(key), caller, (run, queued) =>
    run.telemetry.reconcile('Gateway', keyText(key), () => reconcile(key, { ...deps.reconcile, api: run.api }, { ...(hint && { hint }), ...(shared && !queued && { firstReads: shared }) })),
  );
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
export async function reconcileTarget({ key, hint }: Target, invocation: Invocation, caller: ReconcileCaller, deps: HandlerDeps, shared?: ObserveReads): Promise<Handled> {
  const r = await reconcileCoalesced(key, hint, caller, deps, shared);
  const handled = fromReconcile(key, r);
  if (!r.wake || r.wake.length === 0) return handled;
  // Handed over even when one: this invocation reconciles its own Gateway only.
  const woken = await handOver(r.wake.map((k) => ({ key: k })), invocation, caller, deps, 'event');
  return { ...handled, woke: r.wake.map(keyText).join(','), ...(handled.detail === undefined && woken.detail !== undefined && { detail: `waking the next in line: ${woken.detail}` }) };
}

/**
 * What one reconcile request names: one Gateway, or a batch of one namespace
 * (fan-out.ts), each reconciled as if it had a request of its own, in turn,
 * through the reads they share; one answer for all of them.
 */
export async function reconcileRequest(request: { key: GatewayKey; hint?: ObserveHint; also?: Target[] }, invocation: Invocation, caller: ReconcileCaller, deps: HandlerDeps): Promise<Handled> {
  const first: Target = { key: request.key, ...(request.hint && { hint: request.hint }) };
  if (!request.also || request.also.length === 0) return reconcileTarget(first, invocation, caller, deps);
  const shared = sharedReads(caller.api);
  const handled: Handled[] = [];
  for (const target of [first, ...request.also]) handled.push(await reconcileTarget(target, invocation, caller, deps, shared));
  return foldBatch(handled);
}

/** A batch's answers as one: delivered again if any needs it; the outcome, when they differ, counted. */
function foldBatch(handled: Handled[]): Handled {
  const counts = new Map<string, number>();
  for (const h of handled) counts.set(h.outcome, (counts.get(h.outcome) ?? 0) + 1);
  const [only] = counts.keys();
  const outcome = counts.size === 1 && only !== undefined ? only : [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([o, n]) => `${o}:${n}`).join(',');
  const woke = handled.flatMap((h) => (h.woke ? [h.woke] : []));
  const detail = handled.find((h) => h.detail !== undefined);
  return {
    next: combine(...handled.map((h) => h.next)),
    outcome,
    gateway: handled.map((h) => h.gateway).join(','),
    gateways: handled.length,
    ...(woke.length > 0 && { woke: woke.join(',') }),
    ...(detail && { detail: `${detail.gateway}: ${detail.detail}` }),
  };
}

/** A dead-lettered reconcile request: RetriesExhausted is recorded on each Gateway it names. */
export async function reconcileDeadLetters(keys: GatewayKey[], error: { code: number | undefined; destination: string | undefined; data: string | undefined }, caller: ReconcileCaller, deps: HandlerDeps): Promise<Handled> {
  const [only] = keys;
  if (keys.length === 1 && only) return reconcileDeadLetter(only, error, caller, deps);
  const handled: Handled[] = [];
  for (const key of keys) handled.push(await reconcileDeadLetter(key, error, caller, deps));
  return foldBatch(handled);
}

async function reconcileDeadLetter(key: GatewayKey, error: { code: number | undefined; destination: string | undefined; data: string | undefined }, caller: ReconcileCaller, deps: HandlerDeps): Promise<Handled> {
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
    const r = await fanOut(targets, { ...invocation.cause }, { sink: deps.sink, batch: FAN_OUT_BATCH, handOverBy: handOverBy(invocation), telemetry: invocation.telemetry, ...(token ? { token } : {}), ...(deps.sinkClient ? { client: deps.sinkClient } : {}) });
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
