// Plays a recorded Meridio-2 case (test/oracle/meridio2/) on the shared test
// control plane: its namespace (`meridio-2`, so that the Multus annotation and
// with it the pod-template-hash are the recorded ones), its objects created as
// the admin, its later steps as merge patches, and reads back what was stored
// in the recording's shape.
import { ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { recordedDeployment, recordedGateway, type ComparableStep } from '../oracle/compare.js';
import type { OracleCase, OracleOperation } from '../oracle/oracle-cases.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';

type Json = Record<string, unknown>;

const RESOURCES: Record<string, { group: string; version: string; plural: string }> = {
  gateway: { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways' },
  gatewayconfiguration: { group: 'meridio-2.nordix.org', version: 'v1alpha1', plural: 'gatewayconfigurations' },
};

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

async function namespaceGone(name: string): Promise<true | undefined> {
  try {
    await adminConfig().makeApiClient(CoreV1Api).readNamespace({ name });
    return undefined;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return true;
    throw err;
  }
}

/** A fresh namespace of the case's name (waits out a previous case's deletion). */
export async function freshNamespace(name: string): Promise<void> {
  const core = adminConfig().makeApiClient(CoreV1Api);
  await core.deleteNamespace({ name }).catch((err: unknown) => {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  });
  await waitFor(`namespace ${name} to be gone`, () => namespaceGone(name), { timeoutMs: 120_000, intervalMs: 250 });
  await core.createNamespace({ body: { metadata: { name } } });
}

export async function deleteNamespaceAndWait(name: string): Promise<void> {
  await adminConfig().makeApiClient(CoreV1Api).deleteNamespace({ name }).catch(() => undefined);
  await waitFor(`namespace ${name} to be gone`, () => namespaceGone(name), { timeoutMs: 120_000, intervalMs: 250 });
}

/** Runs one recorded operation as the admin (the user). */
export async function applyOperation(op: OracleOperation, namespace: string): Promise<void> {
  if (op.op === 'create') {
    const object = structuredClone(op.object) as unknown as KubernetesObject;
    await adminConfig().makeApiClient(KubernetesObjectApi).create(object);
    if (object.kind === 'GatewayClass') {
      const name = object.metadata?.name ?? '';
      deleteAfterTest(`GatewayClass ${name}`, () => custom().deleteClusterCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', name }));
    }
    return;
  }
  const resource = RESOURCES[op.resource];
  if (!resource) throw new Error(`no resource ${op.resource} known to the oracle player`);
  const kind = op.resource === 'gateway' ? 'Gateway' : 'GatewayConfiguration';
  const metadata = { name: op.name, namespace, ...(op.op === 'annotate' && { annotations: op.annotations }) };
  const body = { ...(op.op === 'merge-patch' ? op.patch : {}), apiVersion: `${resource.group}/${resource.version}`, kind, metadata };
  await adminConfig().makeApiClient(KubernetesObjectApi).patch(body as KubernetesObject, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
}

export interface ReplicaSetSummary {
  podTemplateHash: string;
  revision: string;
  replicas: number;
}

export async function replicaSetsOf(namespace: string, deployment: string): Promise<ReplicaSetSummary[]> {
  const apps = adminConfig().makeApiClient(AppsV1Api);
  const d = await apps.readNamespacedDeployment({ namespace, name: deployment }).catch(() => null);
  if (d === null) return [];
  const list = await apps.listNamespacedReplicaSet({ namespace });
  return list.items
    .filter((rs) => rs.metadata?.ownerReferences?.some((o) => o.uid === d.metadata?.uid))
    .map((rs) => ({
      podTemplateHash: rs.metadata?.labels?.['pod-template-hash'] ?? '',
      revision: rs.metadata?.annotations?.['deployment.kubernetes.io/revision'] ?? '',
      replicas: rs.spec?.replicas ?? 0,
    }))
    .sort((a, b) => Number(a.revision) - Number(b.revision));
}

/** Waits until kube-controller-manager has seen the Deployment's generation and its ReplicaSets stopped changing. */
export async function settled(namespace: string, deployment: string): Promise<void> {
  let last = '';
  let same = 0;
  await waitFor(`Deployment ${namespace}/${deployment} and its ReplicaSets to settle`, async () => {
    const d = (await custom().getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace, name: deployment }).catch(() => null)) as { metadata: { generation: number }; status?: { observedGeneration?: number } } | null;
    if (d !== null && d.status?.observedGeneration !== d.metadata.generation) return undefined;
    const now = JSON.stringify([d?.metadata.generation, await replicaSetsOf(namespace, deployment)]);
    same = now === last ? same + 1 : 0;
    last = now;
    return same >= 3 ? true : undefined;
  }, { timeoutMs: 60_000, intervalMs: 200 });
}

/** The stored Deployment, ReplicaSets and Gateway in the recording's shape. */
export async function readStep(c: OracleCase): Promise<ComparableStep> {
  const { namespace, gateway } = c.inputs;
  const name = `sllbr-${gateway}`;
  const d = (await custom().getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace, name }).catch(() => null)) as { metadata: Json; spec: unknown } | null;
  const gw = (await custom().getNamespacedCustomObject({ ...RESOURCES.gateway!, namespace, name: gateway })) as { metadata: Json; status?: Json };
  return { deployment: recordedDeployment(d), replicaSets: await replicaSetsOf(namespace, name), gateway: recordedGateway(gw) };
}
