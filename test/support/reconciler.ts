import type { KubeConfig, V1ClusterRole } from '@kubernetes/client-node';
import { kubeApi, type KubeApi } from '../../functions/kube/kube-api.js';
import type { ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { loadTemplate } from '../../functions/reconcile/template.js';
import { CONTROLLER_RBAC_FILE, controllerIdentity as shippedIdentity, shippedClusterRole as roleOf } from '../../tools/harness/service-account-identity.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';

// Reconciles in integration tests run exactly as in production: as the
// controller's ServiceAccount, bound to the ClusterRole shipped in infra/,
// under the RBAC authorizer (the identity the bench and `npm start` use too).

export const CONTROLLER_NAME = 'meridio-2.nordix.org/gateway-controller';
export const LB_SERVICE_ACCOUNT = 'stateless-load-balancer';
export const TEMPLATE_FILE = 'infra/templates/lb-deployment.yaml';

export function shippedClusterRole(): V1ClusterRole {
  return roleOf(CONTROLLER_RBAC_FILE);
}

export interface Reconciler {
  deps: ReconcileDeps;
  api: KubeApi;
  kc: KubeConfig;
  username: string;
  /** A kubeconfig file of the identity, for KUBECONFIG of the function process. */
  kubeconfig: string;
}

/** A controller identity for one test namespace: ServiceAccount + binding to the shipped ClusterRole. */
export async function controllerIdentity(namespace: string, clock: () => Date = () => new Date()): Promise<Reconciler> {
  const identity = await shippedIdentity(adminConfig(), namespace);
  deleteAfterTest(`ClusterRoleBinding ${identity.binding}`, () => identity.dispose());
  const api = kubeApi(identity.kc);
  return {
    kc: identity.kc,
    api,
    username: identity.username,
    kubeconfig: identity.kubeconfig,
    deps: {
      api,
      template: loadTemplate(TEMPLATE_FILE),
      settings: { controllerName: CONTROLLER_NAME, lbServiceAccount: LB_SERVICE_ACCOUNT },
      clock,
      instance: 'test',
    },
  };
}
