import type { KubeConfig } from '@kubernetes/client-node';
import { serviceAccountIdentity, type ServiceAccountIdentity } from './service-account-identity.js';

// The kubectl plugin as the tests and the bench run it: its built entry
// (`npm run build`), and an identity bound to its shipped read-only role
// and nothing else.

export const KUBECTL_MERIDIO_ENTRY = 'dist/cli/kubectl-meridio/main.js';
export const PLUGIN_READER_RBAC_FILE = 'infra/rbac/plugin-reader-clusterrole.yaml';

/** A ServiceAccount `plugin-reader` of `namespace`, bound to the plugin reader role (its probe: a list of GatewayClasses, which the role grants). */
export function pluginReaderIdentity(admin: KubeConfig, namespace: string): Promise<ServiceAccountIdentity> {
  return serviceAccountIdentity(admin, { namespace, serviceAccount: 'plugin-reader', rbacFile: PLUGIN_READER_RBAC_FILE, probeBy: 'list' });
}
