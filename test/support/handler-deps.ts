import { reconcileCoalescer, type HandlerDeps } from '../../functions/handle-event.js';
import type { ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';

// The front door's dependencies as start-function.ts assembles them, for tests
// that drive handleEvent in-process: no sink (several Gateways are reconciled
// locally), a generous budget, a fresh coalescer, no telemetry.
export function handlerDeps(reconcile: ReconcileDeps, opts: { namespaces: string[] } & Partial<Omit<HandlerDeps, 'reconcile' | 'scope'>>): HandlerDeps {
  const { namespaces, ...rest } = opts;
  return {
    api: reconcile.api,
    reconcile,
    scope: { controllerName: reconcile.settings.controllerName, namespaces },
    sink: undefined,
    budgetMs: 60_000,
    coalescer: reconcileCoalescer(),
    telemetry: NO_TELEMETRY,
    ...rest,
  };
}
