import { readFileSync } from 'node:fs';
import { ApiException, CustomObjectsApi, RbacAuthorizationV1Api, loadYaml, type KubeConfig, type V1ClusterRole } from '@kubernetes/client-node';
import { kubeApi, type KubeApi } from '../../functions/kube/kube-api.js';
import type { ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { loadTemplate } from '../../functions/reconcile/template.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, serviceAccountConfig, statusOf } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';

// Reconciles in integration tests run exactly as in production: as the
// controller's ServiceAccount, bound to the ClusterRole shipped in infra/,
// under the RBAC authorizer.

export const CONTROLLER_NAME = 'meridio-2.nordix.org/gateway-controller';
export const LB_SERVICE_ACCOUNT = 'stateless-load-balancer';
export const CLUSTER_ROLE_FILE = 'infra/rbac/controller-clusterrole.yaml';
export const TEMPLATE_FILE = 'infra/templates/lb-deployment.yaml';

export function shippedClusterRole(): V1ClusterRole {
  return loadYaml<V1ClusterRole>(readFileSync(CLUSTER_ROLE_FILE, 'utf8'));
}

async function installClusterRole(rbac: RbacAuthorizationV1Api): Promise<string> {
  const role = shippedClusterRole();
  const name = role.metadata?.name ?? '';
  try {
    await rbac.createClusterRole({ body: role });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 409)) throw err;
    const live = await rbac.readClusterRole({ name });
    await rbac.replaceClusterRole({ name, body: { ...role, metadata: { ...role.metadata, resourceVersion: live.metadata?.resourceVersion } } });
  }
  return name;
}

export interface Reconciler {
  deps: ReconcileDeps;
  api: KubeApi;
  kc: KubeConfig;
  username: string;
}

/** A controller identity for one test namespace: ServiceAccount + binding to the shipped ClusterRole. */
export async function controllerIdentity(namespace: string, clock: () => Date = () => new Date()): Promise<Reconciler> {
  const rbac = adminConfig().makeApiClient(RbacAuthorizationV1Api);
  const roleName = await installClusterRole(rbac);
  const sa = 'meridio-2-gateway-controller';
  const { kc, username } = await serviceAccountConfig(namespace, sa);
  deleteAfterTest(`ClusterRoleBinding ${roleName}-${namespace}`, () => rbac.deleteClusterRoleBinding({ name: `${roleName}-${namespace}` }));
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `${roleName}-${namespace}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
    },
  });
  // The authorizer sees new bindings through an informer: wait until it does
  // (a 404 for a missing class means we were allowed to ask).
  const probe = kc.makeApiClient(CustomObjectsApi);
  await waitFor('the controller ClusterRoleBinding to take effect', async () =>
    (await statusOf(probe.getClusterCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', name: 'rbac-probe' }))) === 404 ? true : undefined);
  const api = kubeApi(kc);
  return {
    kc,
    api,
    username,
    deps: {
      api,
      template: loadTemplate(TEMPLATE_FILE),
      settings: { controllerName: CONTROLLER_NAME, lbServiceAccount: LB_SERVICE_ACCOUNT },
      clock,
      instance: 'test',
    },
  };
}
