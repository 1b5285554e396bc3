import type { Incoming } from '../events/incoming.js';
import type { GatewayKey } from '../api/gateway-key.js';
import { targetsForApiEvent, type DispatchScope, type Target } from './dispatch/dispatch.js';
import { fanOut } from './dispatch/fan-out.js';
import { resyncPass } from './dispatch/resync.js';
import { classifyError } from './kube/classify-error.js';
import { afterDeadLetter, answerFor } from './kube/retry-policy.js';
import { withDeadline } from './kube/deadline.js';
import type { KubeApi } from './kube/kube-api.js';
import { keyedQueue, type KeyedQueue } from './keyed-queue.js';
import { reconcile, type ReconcileDeps, type ReconcileResult } from './reconcile/reconcile.js';
import type { ClassReconcileResult } from './gatewayclass/reconcile.js';
import { reconcileClasses, reconcileClassesFor } from './gatewayclass/triggers.js';

// Routes one parsed event to dispatch, reconcile or the dead-letter record,
// and turns what happened into the HTTP status Knative acts on: 2xx done,
// 503 deliver again.

export interface HandlerDeps {
  api: KubeApi;
  reconcile: ReconcileDeps;
  scope: DispatchScope;
  /** K_SINK: where fan-out reconcile requests go. Without it, several Gateways are reconciled in-process. */
  sink: string | undefined;
  /** In-process reconciles at once when there is no sink. */
  localConcurrency?: number;
  /** The whole invocation's budget; each reconcile run gets the same again. */
  budgetMs: number;
  /** Coalesces reconciles of one Gateway within this process. */
  queue: KeyedQueue<ReconcileResult>;
}

/** A queue for HandlerDeps.queue: one per process. */
export const reconcileQueue = (): KeyedQueue<ReconcileResult> => keyedQueue<ReconcileResult>();

export interface Handled {
  status: 202 | 204 | 503;
  outcome: string;
  gateway?: string;
  gateways?: number;
  /** GatewayClasses reconciled, as name:outcome. */
  classes?: string;
  /** A resync: the Gateways it planned, and the API requests it made to find those that drifted. */
  planned?: number;
  requests?: number;
  detail?: string;
}

const keyText = (k: GatewayKey): string => `${k.namespace}/${k.name}`;

// A run is shared by every request that waits for it, so it gets a budget of
// its own rather than the one of whichever request happened to start it.
function reconcileOnce({ key, hint }: Target, deps: HandlerDeps): Promise<ReconcileResult> {
  return deps.queue.run(keyText(key), () => withDeadline(deps.budgetMs, () => reconcile(key, deps.reconcile, hint ? { hint } : {})));
}

function fromReconcile(key: GatewayKey, r: ReconcileResult): Handled {
  return {
    status: answerFor(r.retry ? 'redeliver' : 'settle'),
    outcome: r.outcome,
    gateway: keyText(key),
    ...(r.error ? { detail: `${r.error.class}${r.error.code ? ` ${r.error.code}` : ''}: ${r.error.message}` } : {}),
  };
}

async function reconcileMany(keys: Target[], deps: HandlerDeps, cause: { type: string; id: string }): Promise<Handled> {
  if (keys.length === 0) return { status: 204, outcome: 'no-gateway-affected', gateways: 0 };
  // One Gateway: reconcile it in this invocation, no extra hop.
  const [only] = keys;
  if (keys.length === 1 && only) return fromReconcile(only.key, await reconcileOnce(only, deps));
  if (deps.sink) {
    const r = await fanOut(keys, cause, { sink: deps.sink });
    if (r.failed.length > 0) {
      return { status: answerFor('redeliver'), outcome: 'fan-out-failed', gateways: keys.length, detail: `${r.failed.length} of ${keys.length} not delivered: ${r.failed[0]?.error}` };
    }
    return { status: 204, outcome: 'fanned-out', gateways: keys.length };
  }
  let next = 0;
  let retry = 0;
  const worker = async (): Promise<void> => {
    while (next < keys.length) {
      const r = await reconcileOnce(keys[next++] as Target, deps);
      if (r.retry) retry++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.localConcurrency ?? 4, keys.length) }, worker));
  return { status: answerFor(retry > 0 ? 'redeliver' : 'settle'), outcome: retry > 0 ? 'some-need-retry' : 'reconciled-locally', gateways: keys.length };
}

// GatewayClass reconciles ride along with the Gateway ones of the same event;
// one that needs another delivery makes the whole answer 503.
function withClasses(classes: ClassReconcileResult[], handled: Handled): Handled {
  if (classes.length === 0) return handled;
  const failed = classes.find((c) => c.retry);
  const summary = classes.map((c) => `${c.name}:${c.outcome}`).join(',');
  return {
    ...handled,
    status: failed ? answerFor('redeliver') : handled.status,
    classes: summary,
    ...(failed?.error ? { detail: `GatewayClass ${failed.name}: ${failed.error.class}${failed.error.code ? ` ${failed.error.code}` : ''}: ${failed.error.message}` } : {}),
  };
}

export async function handleEvent(incoming: Incoming, deps: HandlerDeps, event: { type: string; id: string }): Promise<Handled> {
  try {
    return await withDeadline(deps.budgetMs, () => route(incoming, deps, event));
  } catch (err) {
    const c = classifyError(err);
    if (!c) throw err;
    // Dispatch could not read what it needed, or the budget ran out: let the
    // event come again.
    return { status: answerFor('redeliver'), outcome: c.reason === 'ETIMEDOUT' ? 'deadline-exceeded' : 'dispatch-read-failed', detail: `${c.class}${c.code ? ` ${c.code}` : ''}: ${c.message}` };
  }
}

async function route(incoming: Incoming, deps: HandlerDeps, event: { type: string; id: string }): Promise<Handled> {
  switch (incoming.kind) {
    case 'ignored':
      return { status: 202, outcome: 'ignored', detail: incoming.reason };
    case 'reconcile':
      return fromReconcile(incoming.key, await reconcileOnce(incoming, deps));
    case 'dead-letter': {
      const e = incoming.error;
      const message = `last delivery${e.destination ? ` to ${e.destination}` : ''} answered ${e.code ?? 'no status'}${e.data ? `: ${e.data}` : ''}`;
      // Not coalesced with plain reconciles: it must run with what it knows.
      const r = await withDeadline(deps.budgetMs, () => reconcile(incoming.key, deps.reconcile, { retriesExhausted: { message } }));
      return { ...fromReconcile(incoming.key, r), status: answerFor(afterDeadLetter(r.error, r.outcome === 'error')), outcome: `dead-letter:${r.outcome}` };
    }
    case 'ping': {
      // Only what drifted is reconciled (dispatch/resync.ts).
      const pass = await resyncPass(deps.api, deps.scope, deps.reconcile);
      const classes = await reconcileClasses(pass.classes, deps);
      return { ...withClasses(classes, await reconcileMany(pass.targets, deps, event)), planned: pass.gateways, requests: pass.requests };
    }
    case 'apiserver': {
      const classes = await reconcileClassesFor(incoming, deps);
      return withClasses(classes, await reconcileMany(await targetsForApiEvent(deps.api, deps.scope, incoming, deps.reconcile), deps, event));
    }
  }
}
