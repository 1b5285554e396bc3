// Fixtures for the reconcile planner's unit tests: a small LB template (three
// containers, like Meridio-2's), builders for the objects the planner reads,
// and a stand-in for the API server's defaulting of a written Deployment.
import { plan as planGateway, planStatus } from '../../functions/reconcile/plan/plan.js';
import type { Observed, Plan, Planned, PlanInput, SettledPlan, WriteFailure } from '../../functions/reconcile/plan/plan-types.js';
import { parseQuantity } from '../../functions/reconcile/plan/quantity.js';
import {
  DeploymentSchema,
  GatewayClassSchema,
  GatewayConfigurationSchema,
  GatewaySchema,
  L34RouteSchema,
  type Deployment,
  type Gateway,
  type GatewayClass,
  type GatewayConfiguration,
  type L34Route,
} from '../../api/schemas.js';

export const NOW = '2025-01-01T00:00:00Z';
export const LATER = '2025-01-02T00:00:00Z';
export const CONTROLLER = 'meridio-2.nordix.org/gateway-controller';
export const LB_SERVICE_ACCOUNT = 'sllbr-lb';
export const TEMPLATE_HASH = 'template-hash-1';
export const NS = 'team-a';
export const GW = 'gw1';
export const GW_UID = 'uid-gw1';
export const GC = 'gc1';
export const GC_UID = 'uid-gc1';
export const NAD_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';

export function templateDeployment(mutate?: (raw: Record<string, unknown>) => void): Deployment {
  const raw: Record<string, unknown> = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'stateless-load-balancer', namespace: 'placeholder', labels: { component: 'lb' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'stateless-load-balancer' } },
      template: {
        metadata: {
          labels: { app: 'stateless-load-balancer', component: 'lb' },
          annotations: { [NAD_ANNOTATION]: '[{"name":"tmpl-net","interface":"tmpl0"}]', 'prometheus.io/scrape': 'true' },
        },
        spec: {
          serviceAccountName: 'stateless-load-balancer',
          securityContext: { runAsNonRoot: true },
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: {
                    matchExpressions: [{ key: 'app', operator: 'In', values: ['stateless-load-balancer'] }],
                  },
                  topologyKey: 'kubernetes.io/hostname',
                },
              ],
            },
          },
          containers: [
            {
              name: 'stateless-lb',
              image: 'registry.example/stateless-lb:1',
              env: [
                { name: 'MERIDIO_GATEWAY_NAME', value: '' },
                { name: 'MERIDIO_GATEWAY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              ],
              resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '512Mi' } },
            },
            {
              name: 'router',
              image: 'registry.example/router:1',
              env: [{ name: 'MERIDIO_LOG_LEVEL', value: 'info' }],
              ports: [{ containerPort: 179, name: 'bgp' }],
              resources: { requests: { cpu: '100m', memory: '128Mi' } },
            },
            {
              name: 'nfqlb',
              image: 'registry.example/nfqlb:1',
              resources: { limits: { memory: '256Mi' } },
            },
          ],
        },
      },
    },
  };
  mutate?.(raw);
  return DeploymentSchema.parse(raw);
}

export interface GatewayOptions {
  name?: string;
  uid?: string;
  generation?: number;
  className?: string;
  parametersRef?: { group: string; kind: string; name: string } | null;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  status?: Record<string, unknown>;
  deletionTimestamp?: string;
}

export function gateway(options: GatewayOptions = {}): Gateway {
  const parametersRef =
    options.parametersRef === null
      ? undefined
      : (options.parametersRef ?? { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: GC });
  return GatewaySchema.parse({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: {
      name: options.name ?? GW,
      namespace: NS,
      uid: options.uid ?? GW_UID,
      generation: options.generation ?? 1,
      resourceVersion: '100',
      ...(options.deletionTimestamp !== undefined && { deletionTimestamp: options.deletionTimestamp }),
    },
    spec: {
      gatewayClassName: options.className ?? 'meridio',
      infrastructure: {
        ...(parametersRef !== undefined && { parametersRef }),
        ...(options.labels !== undefined && { labels: options.labels }),
        ...(options.annotations !== undefined && { annotations: options.annotations }),
      },
      listeners: [{ name: 'all', port: 1, protocol: 'TCP' }],
    },
    ...(options.status !== undefined && { status: options.status }),
  });
}

export function gatewayClass(controllerName = CONTROLLER, name = 'meridio'): GatewayClass {
  return GatewayClassSchema.parse({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name },
    spec: { controllerName },
  });
}

export function gatewayConfiguration(
  spec: Record<string, unknown> = {},
  meta: { name?: string; uid?: string; generation?: number } = {},
): GatewayConfiguration {
  return GatewayConfigurationSchema.parse({
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    kind: 'GatewayConfiguration',
    metadata: { name: meta.name ?? GC, namespace: NS, uid: meta.uid ?? GC_UID, generation: meta.generation ?? 1 },
    spec: {
      internalSubnets: [{ attachmentType: 'NAD', cidr: '192.168.100.0/24' }],
      networkAttachments: [{ type: 'NAD', nad: { name: 'internal', namespace: NS, interface: 'int0' } }],
      ...spec,
    },
  });
}

export function route(
  name: string,
  destinationCIDRs: string[],
  parentRefs: Array<Record<string, string>> = [{ name: GW }],
  namespace = NS,
): L34Route {
  return L34RouteSchema.parse({
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    kind: 'L34Route',
    metadata: { name, namespace },
    spec: { parentRefs, destinationCIDRs, backendRefs: [{ name: 'dg' }], priority: 1 },
  });
}

/** Everything one plan() call takes, in one object for the tests' convenience: the API objects, the input and the clock. */
export type Scenario = Observed & PlanInput & { now: string };

/** What plan() answers for a scenario, reads requested included. */
export function planned(s: Scenario): Planned {
  const { template, settings, retriesExhausted, now, ...observed } = s;
  return planGateway(observed, { template, settings, ...(retriesExhausted ? { retriesExhausted } : {}) }, now);
}

/** The plan of a scenario that needs no further reads (fails the test otherwise). */
export function plan(s: Scenario): Plan {
  const p = planned(s);
  if (p.outcome === 'needs-reads') throw new Error(`expected a plan, got a request to read the ${p.reads}`);
  return p;
}

/** The plan of a scenario that needs no Deployment write (fails the test otherwise). */
export function settle(s: Scenario): SettledPlan {
  const p = plan(s);
  if (p.outcome === 'needs-write') throw new Error(`expected a settled plan, got a ${p.deployment.action}`);
  return p;
}

export function observed(overrides: Partial<Scenario> = {}): Scenario {
  return {
    key: { namespace: NS, name: GW },
    gateway: gateway(),
    gatewayClass: gatewayClass(),
    gatewayConfiguration: gatewayConfiguration(),
    deployment: null,
    routes: [],
    namespaces: null,
    template: { deployment: templateDeployment(), hash: TEMPLATE_HASH },
    settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT },
    now: NOW,
    ...overrides,
  };
}

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

// Roughly what the API server stores for decimal quantities: "1000m" -> "1",
// "0.5" -> "500m", numbers -> strings. Binary suffixes are left alone.
export function canonicalQuantity(q: string | number): string {
  const text = String(q);
  const parsed = parseQuantity(q);
  if (parsed === null || /i$/.test(text)) return text;
  if (parsed.num % parsed.den === 0n) return String(parsed.num / parsed.den);
  if ((parsed.num * 1000n) % parsed.den === 0n) return `${(parsed.num * 1000n) / parsed.den}m`;
  return text;
}

function canonicalResources(resources: unknown): void {
  if (!isRecord(resources)) return;
  for (const key of ['requests', 'limits']) {
    const list = resources[key];
    if (!isRecord(list)) continue;
    for (const [name, value] of Object.entries(list)) {
      if (typeof value === 'string' || typeof value === 'number') list[name] = canonicalQuantity(value);
    }
  }
}

// Drop what Go's omitempty would drop.
function dropEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropEmpty);
  if (!isRecord(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    const cleaned = dropEmpty(v);
    if (cleaned === undefined || cleaned === '' || (Array.isArray(cleaned) && cleaned.length === 0)) continue;
    out[k] = cleaned;
  }
  return out;
}

// A stand-in for the server's handling of a written Deployment: defaults,
// omitted empty values, canonical quantities, new resourceVersion (and uid
// and generation on create). The status of the previous object is kept.
export function simulateServer(written: Deployment, previous: Deployment | null, resourceVersion: string): Deployment {
  const obj = dropEmpty(structuredClone(written)) as Json;
  const meta = obj.metadata as Json;
  meta.resourceVersion = resourceVersion;
  meta.uid = previous?.metadata.uid ?? 'uid-deployment';
  meta.generation = (previous?.metadata.generation ?? 0) + 1;
  meta.creationTimestamp = '2024-12-31T00:00:00Z';
  const spec = obj.spec as Json;
  spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } };
  spec.revisionHistoryLimit ??= 10;
  spec.progressDeadlineSeconds ??= 600;
  spec.replicas ??= 1;
  const template = spec.template as Json;
  // Empty label and annotation maps are omitted (omitempty on a map).
  for (const m of [meta, template.metadata]) {
    if (!isRecord(m)) continue;
    for (const k of ['labels', 'annotations']) if (isRecord(m[k]) && Object.keys(m[k]).length === 0) delete m[k];
  }
  const podSpec = template.spec as Json;
  podSpec.dnsPolicy ??= 'ClusterFirst';
  podSpec.restartPolicy ??= 'Always';
  podSpec.schedulerName ??= 'default-scheduler';
  podSpec.securityContext ??= {};
  podSpec.terminationGracePeriodSeconds ??= 30;
  if (typeof podSpec.serviceAccountName === 'string') podSpec.serviceAccount = podSpec.serviceAccountName;
  for (const container of podSpec.containers as Json[]) {
    container.terminationMessagePath ??= '/dev/termination-log';
    container.terminationMessagePolicy ??= 'File';
    container.imagePullPolicy ??= 'IfNotPresent';
    container.resources ??= {};
    canonicalResources(container.resources);
    for (const port of (container.ports as Json[] | undefined) ?? []) port.protocol ??= 'TCP';
    for (const env of (container.env as Json[] | undefined) ?? []) {
      const fieldRef = isRecord(env.valueFrom) ? env.valueFrom.fieldRef : undefined;
      if (isRecord(fieldRef)) fieldRef.apiVersion ??= 'v1';
    }
  }
  if (previous?.status !== undefined) obj.status = structuredClone(previous.status);
  else delete obj.status;
  return DeploymentSchema.parse(obj);
}

// What the Gateway looks like after the I/O layer stored a planned status.
export function withStatus(gw: Gateway, status: { conditions: unknown[]; addresses: unknown[] } | null): Gateway {
  if (status === null) return gw;
  return GatewaySchema.parse({ ...structuredClone(gw), status: { ...gw.status, ...structuredClone(status) } });
}

let resourceVersion = 1000;

/**
 * One invocation of the I/O layer, as the planner's contract describes it:
 * plan, write if asked (succeeding, or failing with `failure`), plan status
 * from the write's outcome, store the status.
 */
export function invoke(o: Scenario, failure?: WriteFailure): { first: Plan; plan: SettledPlan; next: Scenario } {
  const first = plan(o);
  let final: SettledPlan;
  let deployment = o.deployment;
  if (first.outcome === 'needs-write') {
    if (failure) {
      final = planStatus(first.pending, { ok: false, failure });
    } else {
      deployment = simulateServer(first.deployment.object, o.deployment, String((resourceVersion += 1)));
      final = planStatus(first.pending, { ok: true, written: deployment });
    }
  } else {
    final = first;
  }
  // As the shell does: the rollout index patch (a metadata-only merge patch).
  if (final.deployment.action === 'record-index' && deployment) {
    const labels: Record<string, string> = { ...deployment.metadata.labels };
    for (const [k, v] of Object.entries(final.deployment.labels)) {
      if (v === null) delete labels[k];
      else labels[k] = v;
    }
    deployment = { ...deployment, metadata: { ...deployment.metadata, labels } };
  }
  const gw = o.gateway && final.statusChanged ? withStatus(o.gateway, final.status) : o.gateway;
  return { first, plan: final, next: { ...o, gateway: gw, deployment } };
}
