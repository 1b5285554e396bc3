import { readFileSync } from 'node:fs';
import { RbacAuthorizationV1Api, loadAllYaml, type V1ClusterRole } from '@kubernetes/client-node';
import { adminConfig, serviceAccountConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';
import { writeTokenKubeconfig } from './processes.js';

// The ApiServerSource receive adapter runs as the shipped ApiServerSource
// identity (infra/knative/apiserversource-rbac.yaml), in the test namespace.

export const ADAPTER_SA = 'meridio-2-apiserversource';

export function shippedSourceRole(): V1ClusterRole {
  const docs = loadAllYaml(readFileSync('infra/knative/apiserversource-rbac.yaml', 'utf8')) as Array<{ kind?: string }>;
  const role = docs.find((d) => d?.kind === 'ClusterRole');
  if (!role) throw new Error('no ClusterRole in infra/knative/apiserversource-rbac.yaml');
  return role as V1ClusterRole;
}

/** A kubeconfig for the shipped ApiServerSource ServiceAccount in `namespace`. */
export async function adapterIdentity(namespace: string): Promise<string> {
  const rbac = adminConfig().makeApiClient(RbacAuthorizationV1Api);
  const role = shippedSourceRole();
  const name = role.metadata?.name ?? '';
  await rbac.createClusterRole({ body: role }).catch(async (err: unknown) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  const { kc } = await serviceAccountConfig(namespace, ADAPTER_SA);
  deleteAfterTest(`ClusterRoleBinding ${name}-${namespace}`, () => rbac.deleteClusterRoleBinding({ name: `${name}-${namespace}` }));
  await rbac.createClusterRoleBinding({
    body: { metadata: { name: `${name}-${namespace}` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ kind: 'ServiceAccount', name: ADAPTER_SA, namespace }] },
  });
  const token = (kc.getCurrentUser()?.token ?? '') as string;
  return writeTokenKubeconfig(token);
}
