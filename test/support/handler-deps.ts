import { handleEvent } from '../../functions/handle-event.js';
import type { Handled, HandlerDeps } from '../../functions/handler-types.js';
import { affectedByEvent, readEventLists } from '../../functions/dispatch/event-targets.js';
import { dispatch, type ApiServerIncoming } from '../../functions/dispatch/dispatch.js';
import type { PlanningDeps } from '../../functions/dispatch/resync.js';
import type { DispatchScope, Target } from '../../functions/dispatch/target.js';
import type { Incoming } from '../../events/incoming.js';
import { startInvocation, type Cause } from '../../functions/invocation.js';
import type { KubeApi } from '../../functions/kube/kube-api.js';
import { reconcileCoalescer } from '../../functions/reconcile-targets.js';
import type { ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { NO_TELEMETRY, type Telemetry } from '../../functions/telemetry/telemetry.js';

// The handler's dependencies as start-function.ts assembles them, for tests
// that drive handleEvent in-process: no sink (several Gateways are reconciled
// locally) and a fresh coalescer.
export function handlerDeps(reconcile: ReconcileDeps, opts: { namespaces: string[] } & Partial<Omit<HandlerDeps, 'reconcile'>>): HandlerDeps {
  return { sink: undefined, coalescer: reconcileCoalescer(), ...opts, reconcile };
}

/** One invocation as the front door starts it (server.ts): a generous budget and no telemetry unless given. */
export async function invoke(incoming: Incoming, deps: HandlerDeps, cause: Cause, opts: { budgetMs?: number; telemetry?: Telemetry } = {}): Promise<Handled> {
  const { invocation, end } = startInvocation(cause, opts.budgetMs ?? 60_000, opts.telemetry ?? NO_TELEMETRY);
  try {
    return await handleEvent(incoming, invocation, deps);
  } finally {
    end();
  }
}

/** The Gateways an API event affects: as dispatch decides them, or, with `planning`, cut to those that drifted. */
export async function eventTargets(api: KubeApi, scope: DispatchScope, incoming: ApiServerIncoming, planning?: PlanningDeps): Promise<Target[]> {
  if (planning === undefined) return dispatch(incoming, await readEventLists(api, scope, incoming), scope).targets;
  return (await affectedByEvent(api, scope, incoming, planning)).targets;
}
