import { ApiException, AppsV1Api, CustomObjectsApi, type V1Deployment } from '@kubernetes/client-node';
import { GATEWAYS, GATEWAY_CLASSES, GATEWAY_CONFIGURATIONS, L34ROUTES } from '../../functions/kube/kube-api.js';
import type { Resource } from '../../api/watched-resources.js';
import { APPLIED_CONFIGURATION_GENERATION } from '../../api/names.js';
import { GatewaySchema, type Condition, type Gateway } from '../../api/schemas.js';
import { gatewayBody, routeBody } from '../../tools/gateway-manifest.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';
import { CONTROLLER_NAME } from './reconciler.js';

// Objects the tests create as the admin (the user), and ways to read back
// what the controller did.

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

export const APPLIED = 'meridio-2.nordix.org/GatewayConfigurationApplied';
export const LB_AVAILABLE = 'meridio-2.nordix.org/LoadBalancerAvailable';

export type Spec = Record<string, unknown>;

export function configurationSpec(overrides: Spec = {}): Spec {
  return {
    networkAttachments: [{ type: 'NAD', nad: { name: 'app-net', namespace: 'default', interface: 'net1' } }],
    internalSubnets: [{ attachmentType: 'NAD', cidr: '172.16.0.0/24' }],
    horizontalScaling: { replicas: 2, enforceReplicas: true },
    ...overrides,
  };
}

/** A GatewayClass, deleted after the test (deleteAfterTest); `spec` adds to controllerName. */
export async function createClass(name: string, controllerName = CONTROLLER_NAME, spec: Spec = {}): Promise<void> {
  await custom().createClusterCustomObject({ ...GATEWAY_CLASSES, body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name }, spec: { controllerName, ...spec } } });
  deleteAfterTest(`GatewayClass ${name}`, () => custom().deleteClusterCustomObject({ ...GATEWAY_CLASSES, name }));
}

export async function createConfiguration(namespace: string, name: string, spec: Spec = configurationSpec()): Promise<{ metadata: { uid: string; generation: number } }> {
  return (await custom().createNamespacedCustomObject({
    ...GATEWAY_CONFIGURATIONS,
    namespace,
    body: { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'GatewayConfiguration', metadata: { name }, spec },
  })) as { metadata: { uid: string; generation: number } };
}

export { gatewayBody };

export async function createGateway(namespace: string, name: string, className: string, configName?: string, infra: Spec = {}): Promise<Gateway> {
  return GatewaySchema.parse(await custom().createNamespacedCustomObject({ ...GATEWAYS, namespace, body: gatewayBody(name, className, configName, infra) }));
}

export async function createRoute(namespace: string, name: string, gateway: string, vips: string[], gatewayNamespace?: string): Promise<void> {
  await custom().createNamespacedCustomObject({ ...L34ROUTES, namespace, body: routeBody(name, gateway, vips, gatewayNamespace) });
}

/** A user's read-modify-write: on 409 (someone wrote in between, such as the deployment controller its status), read again and redo the edit. */
async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i > 5 || !(err instanceof ApiException && err.code === 409)) throw err;
    }
  }
}

/** Read-modify-write of any namespaced object's spec as the admin, retrying on 409 like a user would. */
export async function editSpec(ref: Resource, namespace: string, name: string, edit: (spec: Spec) => Spec): Promise<{ metadata: { generation: number } }> {
  return retryOnConflict(async () => {
    const live = (await custom().getNamespacedCustomObject({ ...ref, namespace, name })) as { spec: Spec; metadata: Spec };
    return (await custom().replaceNamespacedCustomObject({ ...ref, namespace, name, body: { ...live, spec: edit(live.spec) } })) as { metadata: { generation: number } };
  });
}

/** A hand edit of a Deployment as the admin (kubectl edit), retrying on 409 like a user would. */
export async function editDeployment(namespace: string, name: string, edit: (live: V1Deployment) => V1Deployment): Promise<V1Deployment> {
  const apps = adminConfig().makeApiClient(AppsV1Api);
  return retryOnConflict(async () => apps.replaceNamespacedDeployment({ namespace, name, body: edit(await apps.readNamespacedDeployment({ namespace, name })) }));
}

export async function deleteObject(ref: Resource, namespace: string, name: string): Promise<void> {
  await custom().deleteNamespacedCustomObject({ ...ref, namespace, name });
}

export async function readGateway(namespace: string, name: string): Promise<Gateway> {
  return GatewaySchema.parse(await custom().getNamespacedCustomObject({ ...GATEWAYS, namespace, name }));
}

/** The raw status JSON, for byte-for-byte comparisons. */
export async function rawStatus(namespace: string, name: string): Promise<string> {
  const gw = (await custom().getNamespacedCustomObject({ ...GATEWAYS, namespace, name })) as { status?: unknown };
  return JSON.stringify(gw.status);
}

export function condition(gw: Gateway, type: string): Condition | undefined {
  return gw.status?.conditions?.find((c) => c.type === type);
}

export async function readDeployment(namespace: string, name: string): Promise<V1Deployment> {
  return adminConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name });
}

/**
 * Until kube-controller-manager's Deployment controller has written a status
 * for the Deployment's current generation. That status is a change from
 * outside for the Gateway (LoadBalancerAvailable leaves Pending): a test
 * that wants a fixed point waits for it and lets one reconcile report it.
 */
export async function deploymentObserved(namespace: string, name: string): Promise<void> {
  await waitFor(`the Deployment controller to observe ${namespace}/${name}`, async () => {
    const d = await readDeployment(namespace, name);
    return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) ? true : undefined;
  });
}

/** The raw Deployment JSON (no client-side model conversion). */
export async function rawDeployment(namespace: string, name: string): Promise<Record<string, unknown> & { metadata: { annotations?: Record<string, string>; resourceVersion: string; generation: number } }> {
  return (await custom().getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace, name })) as never;
}

export interface EventSummary {
  type: string;
  reason: string;
  note: string;
  series?: { count: number };
  regarding?: { name?: string };
}

export async function listEvents(namespace: string): Promise<EventSummary[]> {
  const list = (await custom().listNamespacedCustomObject({ group: 'events.k8s.io', version: 'v1', namespace, plural: 'events' })) as { items: EventSummary[] };
  return list.items;
}

/**
 * Polls until the Gateway is Programmed and Applied; when a configuration
 * generation is given, until its Deployment records it and the Gateway's
 * status says so. The function writes the Deployment before the status, so
 * the annotation alone can be read while the status still names the
 * generation before.
 */
export const programmedAndApplied = (namespace: string, gw: string, generation?: string) => async (): Promise<true | undefined> => {
  const g = await readGateway(namespace, gw).catch(() => undefined);
  const applied = g === undefined ? undefined : condition(g, APPLIED);
  if (!g || condition(g, 'Programmed')?.status !== 'True' || applied?.status !== 'True') return undefined;
  if (generation === undefined) return true;
  if (!(applied.message ?? '').includes(`generation ${generation} applied`)) return undefined;
  const d = await rawDeployment(namespace, `sllbr-${gw}`);
  return d.metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION] === generation ? true : undefined;
};
