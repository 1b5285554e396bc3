import type { Incoming } from '../events/incoming.js';
import { keyText, type GatewayKey } from '../api/gateway-key.js';
import { targetsForApiEvent, type DispatchScope, type Target } from './dispatch/dispatch.js';
import { fanOut } from './dispatch/fan-out.js';
import type { SinkClient } from './dispatch/sink-client.js';
import { resyncPass } from './dispatch/resync.js';
import { classifyError, type ClassifiedError } from './kube/classify-error.js';
import { afterDeadLetter, afterDispatchFailure, afterFanOut, combine, type Delivery, type FanOutOrigin } from './kube/retry-policy.js';
import { deadlineIn, handOverBy, withDeadline } from './kube/deadline.js';
import type { KubeApi } from './kube/kube-api.js';
import { coalescer, type Coalescer } from './coalescer.js';
import { reconcile, type ReconcileDeps, type ReconcileResult } from './reconcile/reconcile.js';
import type { ClassReconcileResult } from './gatewayclass/reconcile.js';
import { reconcileClasses, reconcileClassesFor } from './gatewayclass/class-selection.js';
import type { Telemetry } from './telemetry/telemetry.js';

// Routes one parsed event to dispatch, reconcile or the dead-letter record,
// under one deadline for the whole invocation, and reports what happened as
// a (result, next step) pair. The front door (server.ts) turns `next` into
// the HTTP answer with retry-policy's answerFor, nowhere else.

export interface HandlerDeps {
  api: KubeApi;
  reconcile: ReconcileDeps;
  scope: DispatchScope;
  /** K_SINK: where fan-out reconcile requests go. Without it, several Gateways are reconciled in-process. */
  sink: string | undefined;
  /** The sink's TLS trust and CloudEvent extensions (the SinkBinding's K_CA_CERTS, K_CE_OVERRIDES); absent: plain. */
  sinkClient?: SinkClient;
  /** The OIDC token to present to the sink, read fresh for each fan-out (it is rotated); undefined without OIDC. */
  sinkToken?: () => Promise<string | undefined>;
  /** In-process reconciles at once when there is no sink. */
  localConcurrency?: number;
  /** The whole invocation's budget, below the Knative Service's timeoutSeconds. */
  budgetMs: number;
  /** Coalesces reconciles of one Gateway within this process. */
  coalescer: Coalescer<ReconcileResult>;
  /** Reconcile, fan-out and dead-letter metrics and spans (NO_TELEMETRY for none). */
  telemetry: Telemetry;
}

/** A coalescer for HandlerDeps.coalescer: one per process. */
export const reconcileCoalescer = (): Coalescer<ReconcileResult> => coalescer<ReconcileResult>();

export interface Handled {
  next: Delivery;
  /** Well-formed but not ours: acknowledged (202) and logged. */
  ignored?: true;
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

const errorText = (e: ClassifiedError): string => `${e.class}${e.code ? ` ${e.code}` : ''}: ${e.message}`;

// A run may answer several invocations (coalescer.ts): it lasts until the last
// of them stops waiting, so an invocation that has answered 503 has no run
// left writing on its behalf.
function reconcileOnce({ key, hint }: Target, deps: HandlerDeps, deadline: number): Promise<ReconcileResult> {
  return deps.coalescer.run(keyText(key), deadline, (runDeadline) => withDeadline(runDeadline, () => deps.telemetry.reconcile('Gateway', keyText(key), () => reconcile(key, deps.reconcile, hint ? { hint } : {}))));
}

function fromReconcile(key: GatewayKey, r: ReconcileResult): Handled {
  return { next: r.next, outcome: r.outcome, gateway: keyText(key), ...(r.error ? { detail: errorText(r.error) } : {}) };
}

// `origin`: a resync pass leaves what it could not hand over to the next
// pass; an API event is delivered again for it (retry-policy.ts).
async function reconcileMany(keys: Target[], deps: HandlerDeps, cause: { type: string; id: string }, origin: FanOutOrigin, deadline: number): Promise<Handled> {
  if (keys.length === 0) return { next: 'settle', outcome: 'no-gateway-affected', gateways: 0 };
  // One Gateway: reconcile it in this invocation, no extra hop.
  const [only] = keys;
  if (keys.length === 1 && only) return fromReconcile(only.key, await reconcileOnce(only, deps, deadline));
  if (deps.sink) {
    const token = await deps.sinkToken?.();
    const r = await fanOut(keys, cause, { sink: deps.sink, handOverBy: handOverBy(deadline, deps.budgetMs), telemetry: deps.telemetry, ...(token ? { token } : {}), ...(deps.sinkClient ? { client: deps.sinkClient } : {}) });
    const next = afterFanOut(r.failed.length, r.unsent, origin);
    if (r.failed.length > 0) return { next, outcome: 'fan-out-failed', gateways: keys.length, detail: `${r.failed.length} of ${keys.length} not delivered: ${r.failed[0]?.error}` };
    if (r.unsent > 0) {
      const rest = origin === 'resync' ? 'the next pass reconciles the rest' : 'delivered again for the rest';
      return { next, outcome: 'fanned-out-partly', gateways: keys.length, detail: `${r.sent} of ${keys.length} handed over before the invocation's time ran out; ${rest}` };
    }
    return { next, outcome: 'fanned-out', gateways: keys.length };
  }
  let index = 0;
  const nexts: Delivery[] = [];
  const worker = async (): Promise<void> => {
    while (index < keys.length) nexts.push((await reconcileOnce(keys[index++] as Target, deps, deadline)).next);
  };
  await Promise.all(Array.from({ length: Math.min(deps.localConcurrency ?? 4, keys.length) }, worker));
  const next = combine(...nexts);
  return { next, outcome: next === 'redeliver' ? 'some-need-retry' : 'reconciled-locally', gateways: keys.length };
}

// GatewayClass reconciles ride along with the Gateway ones of the same event;
// one that needs another delivery makes the whole answer a redelivery.
function withClasses(classes: ClassReconcileResult[], handled: Handled): Handled {
  if (classes.length === 0) return handled;
  const failed = classes.find((c) => c.next === 'redeliver');
  return {
    ...handled,
    next: combine(handled.next, ...classes.map((c) => c.next)),
    classes: classes.map((c) => `${c.name}:${c.outcome}`).join(','),
    ...(failed?.error ? { detail: `GatewayClass ${failed.name}: ${errorText(failed.error)}` } : {}),
  };
}

export async function handleEvent(incoming: Incoming, deps: HandlerDeps, event: { type: string; id: string }): Promise<Handled> {
  const deadline = deadlineIn(deps.budgetMs);
  try {
    return await withDeadline(deadline, () => route(incoming, deps, event, deadline));
  } catch (err) {
    const c = classifyError(err);
    if (!c) throw err;
    // Dispatch could not read what it needed, or the budget ran out.
    return { next: afterDispatchFailure(), outcome: c.reason === 'ETIMEDOUT' ? 'deadline-exceeded' : 'dispatch-read-failed', detail: errorText(c) };
  }
}

async function route(incoming: Incoming, deps: HandlerDeps, event: { type: string; id: string }, deadline: number): Promise<Handled> {
  switch (incoming.kind) {
    case 'ignored':
      return { next: 'settle', ignored: true, outcome: 'ignored', detail: incoming.reason };
    case 'reconcile':
      return fromReconcile(incoming.key, await reconcileOnce(incoming, deps, deadline));
    case 'dead-letter': {
      const e = incoming.error;
      const message = `last delivery${e.destination ? ` to ${e.destination}` : ''} answered ${e.code ?? 'no status'}${e.data ? `: ${e.data}` : ''}`;
      // Not coalesced with plain reconciles: it must run with what it knows.
      const r = await deps.telemetry.reconcile('Gateway', keyText(incoming.key), () => reconcile(incoming.key, deps.reconcile, { retriesExhausted: { message } }));
      deps.telemetry.deadLetter(r.outcome);
      return { ...fromReconcile(incoming.key, r), next: afterDeadLetter(r.error, r.outcome === 'error'), outcome: `dead-letter:${r.outcome}` };
    }
    case 'ping': {
      // Only what drifted is reconciled (dispatch/resync.ts).
      const pass = await resyncPass(deps.api, deps.scope, deps.reconcile);
      const classes = await reconcileClasses(pass.classes, deps);
      return { ...withClasses(classes, await reconcileMany(pass.targets, deps, event, 'resync', deadline)), planned: pass.gateways, requests: pass.requests };
    }
    case 'apiserver': {
      const classes = await reconcileClassesFor(incoming, deps);
      return withClasses(classes, await reconcileMany(await targetsForApiEvent(deps.api, deps.scope, incoming, deps.reconcile), deps, event, 'event', deadline));
    }
  }
}
