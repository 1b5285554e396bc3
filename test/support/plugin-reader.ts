import { ApiException, RbacAuthorizationV1Api, type KubeConfig, type V1PolicyRule } from '@kubernetes/client-node';
import { tokenKubeConfig } from '../../tools/harness/kubeconfig.js';
import { serviceAccountToken, waitUntilAuthorized } from '../../tools/harness/service-account-identity.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';

// A person running `kubectl meridio explain` and `plan`: a ServiceAccount
// bound to read-only rules, under the RBAC authorizer. The cluster-wide
// rules are what the verbs read about Gateways; the controller's own
// Service and its template ConfigMap are read in the controller's namespace
// only (a Role), so the reader cannot read every ConfigMap of the cluster.
// The plugin branch ships the ClusterRole (infra/rbac/plugin-reader-clusterrole.yaml):
// these are the rules explain and plan add to it.

export const EXPLAIN_PLAN_CLUSTER_RULES: V1PolicyRule[] = [
  { apiGroups: ['gateway.networking.k8s.io'], resources: ['gateways', 'gatewayclasses'], verbs: ['get', 'list'] },
  { apiGroups: ['meridio-2.nordix.org'], resources: ['gatewayconfigurations'], verbs: ['get'] },
  { apiGroups: ['meridio-2.nordix.org'], resources: ['l34routes'], verbs: ['list'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['get'] },
  { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['list'] },
];

/** In the controller's namespace only. */
export const EXPLAIN_PLAN_CONTROLLER_NAMESPACE_RULES: V1PolicyRule[] = [
  { apiGroups: ['serving.knative.dev'], resources: ['services'], verbs: ['get'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
];

export interface PluginReader {
  kc: KubeConfig;
  username: string;
}

const ignore404 = (err: unknown): void => {
  if (!(err instanceof ApiException && err.code === 404)) throw err;
};

/** The reader in `namespace`, the controller installed in `controllerNamespace`. */
export async function pluginReader(namespace: string, controllerNamespace: string): Promise<PluginReader> {
  const rbac = adminConfig().makeApiClient(RbacAuthorizationV1Api);
  const name = `kubectl-meridio-reader-${namespace}`;
  const subjects = [{ kind: 'ServiceAccount', name: 'kubectl-meridio-reader', namespace }];
  await rbac.createClusterRole({ body: { metadata: { name }, rules: EXPLAIN_PLAN_CLUSTER_RULES } });
  deleteAfterTest(`ClusterRole ${name}`, () => rbac.deleteClusterRole({ name }).catch(ignore404));
  await rbac.createClusterRoleBinding({ body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects } });
  deleteAfterTest(`ClusterRoleBinding ${name}`, () => rbac.deleteClusterRoleBinding({ name }).catch(ignore404));
  await rbac.createNamespacedRole({ namespace: controllerNamespace, body: { metadata: { name }, rules: EXPLAIN_PLAN_CONTROLLER_NAMESPACE_RULES } });
  await rbac.createNamespacedRoleBinding({ namespace: controllerNamespace, body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects } });
  const token = await serviceAccountToken(adminConfig(), namespace, 'kubectl-meridio-reader');
  const kc = tokenKubeConfig(adminConfig(), token, 'kubectl-meridio-reader');
  await waitUntilAuthorized(kc, `${namespace}/kubectl-meridio-reader`);
  return { kc, username: `system:serviceaccount:${namespace}:kubectl-meridio-reader` };
}
