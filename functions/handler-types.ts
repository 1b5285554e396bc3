import type { Coalescer } from './coalescer.js';
import type { SinkClient } from './dispatch/sink-client.js';
import type { Delivery } from './kube/retry-policy.js';
import type { KubeApi } from './kube/kube-api.js';
import type { ReconcileDeps, ReconcileResult } from './reconcile/reconcile.js';
import type { Telemetry } from './telemetry/telemetry.js';

// What the handler (handle-event.ts) and the steps it calls share: their
// dependencies, fixed for the process, and the handler's result.

/** Whom a Gateway's reconcile works for: one invocation's deadline, its API client and telemetry. */
export interface ReconcileCaller {
  readonly deadline: number;
  /** Bound to the invocation's signal (KubeApi.withSignal). */
  readonly api: KubeApi;
  readonly telemetry: Telemetry;
}

export interface HandlerDeps {
  /** The API client (not yet bound to an invocation), template, settings (controllerName among them), clock and instance. */
  reconcile: ReconcileDeps;
  /** Namespaces served; empty means all. */
  namespaces: string[];
  /** K_SINK: where fan-out reconcile requests go. Without it, several Gateways are reconciled in-process. */
  sink: string | undefined;
  /** The sink's TLS trust and CloudEvent extensions (the SinkBinding's K_CA_CERTS, K_CE_OVERRIDES); absent: plain. */
  sinkClient?: SinkClient;
  /** The OIDC token to present to the sink, read fresh for each fan-out (it is rotated); undefined without OIDC. */
  sinkToken?: () => Promise<string | undefined>;
  /** In-process reconciles at once when there is no sink. */
  localConcurrency?: number;
  /** Coalesces reconciles of one Gateway within this process: one per process. */
  coalescer: Coalescer<ReconcileResult, ReconcileCaller>;
}

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
  /** A resync: of the Gateways planned, those of this controller's classes. */
  ours?: number;
  requests?: number;
  /** The Gateways this reconcile woke, having left the rollout line (reconcile-targets.ts). */
  woke?: string;
  detail?: string;
}
