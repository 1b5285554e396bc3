import { connectionPool } from '../../functions/kube/pooled-client.js';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { ApiException, AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { GATEWAYS, GATEWAY_CLASSES, GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { CONTROLLER_NAME, type BenchCluster } from './cluster.js';
import { gatewayBody } from '../../tools/gateway-manifest.js';

// The objects the benchmarks work on, created and edited as the admin (the
// user), and the checks of what the controller made of them.

export const APPLIED = 'meridio-2.nordix.org/GatewayConfigurationApplied';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface GatewayObject {
  metadata: { name: string; namespace?: string; generation?: number };
  status?: { conditions?: Condition[] };
}

export interface ConfigurationObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; generation?: number; uid?: string; resourceVersion?: string };
  spec: Record<string, unknown>;
}

const custom = (c: BenchCluster): CustomObjectsApi => c.admin.makeApiClient(CustomObjectsApi);

export function configurationSpec(replicas = 2, enforceReplicas = true): Record<string, unknown> {
  return {
    networkAttachments: [{ type: 'NAD', nad: { name: 'app-net', namespace: 'default', interface: 'net1' } }],
    internalSubnets: [{ attachmentType: 'NAD', cidr: '172.16.0.0/24' }],
    horizontalScaling: { replicas, enforceReplicas },
  };
}

export async function createClass(c: BenchCluster, name: string): Promise<void> {
  await custom(c).createClusterCustomObject({
    ...GATEWAY_CLASSES,
    body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name }, spec: { controllerName: CONTROLLER_NAME } },
  });
}

export async function deleteClass(c: BenchCluster, name: string): Promise<void> {
  try {
    await custom(c).deleteClusterCustomObject({ ...GATEWAY_CLASSES, name });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  }
}

/** enforceReplicas false: the controller keeps an LB Deployment's live replica count (P10's stay at 0). */
export async function createConfiguration(c: BenchCluster, namespace: string, name: string, replicas = 2, enforceReplicas = true): Promise<ConfigurationObject> {
  return (await custom(c).createNamespacedCustomObject({
    ...GATEWAY_CONFIGURATIONS,
    namespace,
    body: { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'GatewayConfiguration', metadata: { name }, spec: configurationSpec(replicas, enforceReplicas) },
  })) as ConfigurationObject;
}

/** One spec edit (replicas), retried on 409 like a user would; returns the object as stored, with its new generation. */
export async function editConfiguration(c: BenchCluster, namespace: string, name: string): Promise<ConfigurationObject> {
  for (let i = 0; ; i++) {
    const live = (await custom(c).getNamespacedCustomObject({ ...GATEWAY_CONFIGURATIONS, namespace, name })) as ConfigurationObject;
    const scaling = live.spec.horizontalScaling as { replicas?: number } | undefined;
    const replicas = (scaling?.replicas ?? 2) >= 4 ? 2 : (scaling?.replicas ?? 2) + 1;
    try {
      return (await custom(c).replaceNamespacedCustomObject({
        ...GATEWAY_CONFIGURATIONS,
        namespace,
        name,
        body: { ...live, spec: { ...live.spec, horizontalScaling: { replicas, enforceReplicas: true } } },
      })) as ConfigurationObject;
    } catch (err) {
      if (i > 5 || !(err instanceof ApiException && err.code === 409)) throw err;
    }
  }
}


/** Creates Gateways with bounded concurrency (the API server is shared with the measurement). */
export async function createGateways(c: BenchCluster, namespace: string, names: string[], className: string, configName: string, concurrency = 8): Promise<void> {
  // One connection pool: thousands of creates must not each open a TLS connection.
  const api = new CustomObjectsApi(connectionPool(c.admin, { requestTimeoutMs: 60_000, telemetry: NO_TELEMETRY }).configuration());
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < names.length) {
      const name = names[next++] as string;
      await api.createNamespacedCustomObject({ ...GATEWAYS, namespace, body: gatewayBody(name, className, configName) });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, worker));
}

export async function createForeignDeployment(c: BenchCluster, namespace: string, name: string): Promise<void> {
  const labels = { app: `foreign-${name}` };
  await c.admin.makeApiClient(AppsV1Api).createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name, labels },
      spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'example.invalid/foreign:1' }] } } },
    },
  });
}

export async function listGateways(c: BenchCluster, namespace: string): Promise<GatewayObject[]> {
  const list = (await custom(c).listNamespacedCustomObject({ ...GATEWAYS, namespace })) as { items: GatewayObject[] };
  return list.items;
}

export async function getGateway(c: BenchCluster, namespace: string, name: string): Promise<GatewayObject> {
  return (await custom(c).getNamespacedCustomObject({ ...GATEWAYS, namespace, name })) as GatewayObject;
}

export function condition(gw: GatewayObject, type: string): Condition | undefined {
  return gw.status?.conditions?.find((x) => x.type === type);
}

/** Applied=True naming the given GatewayConfiguration generation. */
export function appliedWith(gw: GatewayObject, generation: number): boolean {
  const applied = condition(gw, APPLIED);
  return applied?.status === 'True' && (applied.message ?? '').includes(`generation ${generation} applied`);
}

/** How many of the namespace's Gateways (among `names`) show Applied=True with `generation`. */
export async function countApplied(c: BenchCluster, namespace: string, names: ReadonlySet<string>, generation: number): Promise<number> {
  return (await listGateways(c, namespace)).filter((g) => names.has(g.metadata.name) && appliedWith(g, generation)).length;
}

export async function waitApplied(c: BenchCluster, namespace: string, names: string[], generation: number, timeoutMs = 120000): Promise<void> {
  const set = new Set(names);
  await waitFor(`${names.length} Gateways in ${namespace} Applied with generation ${generation}`, async () => ((await countApplied(c, namespace, set, generation)) === set.size ? true : undefined), { timeoutMs, intervalMs: 200 });
}

/**
 * With kube-controller-manager running, the deployment controller writes each
 * Deployment's status after our writes, and that changes LoadBalancerAvailable:
 * wait until it has observed the current generation of every Deployment in
 * the namespace, so that a following pass sees settled inputs.
 */
export async function waitDeploymentsObserved(c: BenchCluster, namespace: string, expected: number, timeoutMs = 120000): Promise<void> {
  if (!c.controllerManager) return;
  const apps = c.admin.makeApiClient(AppsV1Api);
  await waitFor(`deployment status of ${expected} Deployments in ${namespace}`, async () => {
    const list = await apps.listNamespacedDeployment({ namespace });
    const ours = list.items.filter((d) => d.metadata?.name?.startsWith('sllbr-'));
    const settled = ours.filter((d) => d.status?.observedGeneration !== undefined && d.status.observedGeneration === d.metadata?.generation);
    return ours.length >= expected && settled.length === ours.length ? true : undefined;
  }, { timeoutMs, intervalMs: 250 });
}
