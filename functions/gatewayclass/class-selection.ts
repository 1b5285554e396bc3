import type { Incoming } from '../../events/incoming.js';
import type { KubeApi } from '../kube/kube-api.js';
import { classesDefaultingTo } from '../dispatch/class-defaults.js';
import type { ReconcileDeps } from '../reconcile/reconcile.js';
import { reconcileClass, type ClassReconcileResult } from './reconcile.js';
import { NO_TELEMETRY, type Telemetry } from '../telemetry/telemetry.js';

// Which GatewayClasses an event asks to reconcile, and running those
// reconciles. A class's status depends on the class itself, on the
// GatewayConfiguration its parametersRef names, and on the installed CRDs
// (seen at resync, which plans every class of ours and reconciles those whose
// status would change). Classes are few, so they are reconciled in the
// invocation that received the event, one reconcile per class.

export async function classesForEvent(api: KubeApi, incoming: Incoming): Promise<string[]> {
  if (incoming.kind !== 'apiserver') return [];
  if (incoming.resource.kind === 'GatewayClass') return [incoming.resource.name];
  if (incoming.resource.kind === 'GatewayConfiguration') {
    return classesDefaultingTo(await api.listGatewayClasses(), incoming.resource.namespace ?? '', incoming.resource.name).sort();
  }
  return [];
}

/** One reconcile per class, in this invocation. */
export async function reconcileClasses(names: readonly string[], deps: { reconcile: ReconcileDeps; telemetry?: Telemetry }): Promise<ClassReconcileResult[]> {
  const r = deps.reconcile;
  const telemetry = deps.telemetry ?? NO_TELEMETRY;
  const classDeps = { api: r.api, controllerName: r.settings.controllerName, template: r.template.deployment, clock: r.clock };
  const results: ClassReconcileResult[] = [];
  for (const name of names) results.push(await telemetry.reconcile('GatewayClass', name, () => reconcileClass(name, classDeps)));
  return results;
}

/** The classes an API event names (the resync plans its own: dispatch/resync.ts). */
export async function reconcileClassesFor(incoming: Incoming, deps: { api: KubeApi; reconcile: ReconcileDeps; telemetry?: Telemetry }): Promise<ClassReconcileResult[]> {
  return reconcileClasses(await classesForEvent(deps.api, incoming), deps);
}
