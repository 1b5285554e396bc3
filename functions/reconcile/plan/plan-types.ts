// The contract between the pure planner and the I/O layer that observes, writes
// and reports.
import type { StatusAddress } from './addresses.js';
import type { ListenerStatus } from './listener-status.js';
import type { Settings } from './render-deployment.js';
import type { Condition, Deployment, Gateway, GatewayClass, GatewayConfiguration, L34Route, Namespace } from '../../../api/schemas.js';

export type FailureClass = 'transient' | 'persistent' | 'permanent';

export interface WriteFailure {
  class: FailureClass;
  code?: number;
  message: string;
}

export type WriteResult = { ok: true; before: Deployment | null } | { ok: false; failure: WriteFailure };

export interface Observed {
  key: { namespace: string; name: string };
  // null: deleted, nothing to do.
  gateway: Gateway | null;
  gatewayClass: GatewayClass | null;
  gatewayConfiguration: GatewayConfiguration | null;
  // The live sllbr-<gateway>, whoever owns it.
  deployment: Deployment | null;
  // The L34Routes that may attach: the Gateway's namespace's, or every
  // namespace's when a listener admits routes from other namespaces.
  routes: L34Route[];
  // Namespaces and their labels, read only when a listener selects namespaces
  // by label; null otherwise.
  namespaces: Namespace[] | null;
  template: { deployment: Deployment; hash: string };
  settings: Settings;
  // RFC 3339; the only clock the planner sees (lastTransitionTime).
  now: string;
  // Set when this invocation already wrote the Deployment: on success
  // `deployment` is the written result, on failure it is the unchanged live one.
  write?: WriteResult;
  // Set by the dead-letter path.
  retriesExhausted?: { message: string };
}

export type DeploymentAction =
  | { action: 'none' }
  | { action: 'create'; object: Deployment }
  | { action: 'update'; object: Deployment }
  // After a write that admission changed: record what was stored, so that the
  // next reconcile does not take admission's change for drift (a metadata-only
  // merge patch; best effort).
  | { action: 'record-admission'; name: string; annotations: Record<string, string> };

export interface GatewayStatusPlan {
  conditions: Condition[];
  addresses: StatusAddress[];
  // Absent: leave status.listeners as stored.
  listeners?: ListenerStatus[];
}

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

export type Outcome =
  | 'not-found'
  | 'not-ours'
  | 'invalid'
  | 'collision'
  | 'in-sync'
  | 'needs-write'
  | 'write-failed'
  | 'applied';

export interface Plan {
  deployment: DeploymentAction;
  // The desired full Gateway status; null: do not write status.
  status: GatewayStatusPlan | null;
  // Versus gateway.status: conditions ignoring lastTransitionTime, and addresses.
  statusChanged: boolean;
  events: PlannedEvent[];
  outcome: Outcome;
}
