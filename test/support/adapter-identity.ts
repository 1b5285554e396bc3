import type { V1ClusterRole } from '@kubernetes/client-node';
import { EVENT_SOURCE_RBAC_FILE, EVENT_SOURCE_SERVICE_ACCOUNT, eventSourceIdentity, shippedClusterRole } from '../../tools/harness/service-account-identity.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';

// The ApiServerSource receive adapter runs as the shipped ApiServerSource
// identity (infra/knative/apiserversource-rbac.yaml), in the test namespace.

export const ADAPTER_SA = EVENT_SOURCE_SERVICE_ACCOUNT;

export function shippedSourceRole(): V1ClusterRole {
  return shippedClusterRole(EVENT_SOURCE_RBAC_FILE);
}

/** A kubeconfig file for the shipped ApiServerSource ServiceAccount in `namespace`. */
export async function adapterIdentity(namespace: string): Promise<string> {
  const identity = await eventSourceIdentity(adminConfig(), namespace);
  deleteAfterTest(`ClusterRoleBinding ${identity.binding}`, () => identity.dispose());
  return identity.kubeconfig;
}
