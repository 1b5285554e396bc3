import { freePort } from '../../tools/controlplane/free-port.js';
import { repoPath } from '../../tools/harness/repo-root.js';
import { serviceAccountIdentity } from '../../tools/harness/service-account-identity.js';
import { MONITORING_DIR } from '../../tools/monitoring/files.mjs';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';
import { startGoProcess, type GoProcess } from './go-process.js';

// kube-state-metrics as the monitoring component runs it: its shipped
// ServiceAccount role (bound in the test's namespace) and, unless a test
// gives another, the shipped CustomResourceState configuration, with only
// that configuration's metrics, on loopback.

export const KSM_SERVICE_ACCOUNT = 'meridio-2-kube-state-metrics';
export const KSM_RBAC_FILE = `${MONITORING_DIR}/kube-state-metrics-rbac.yaml`;
export const KSM_CONFIG = `${MONITORING_DIR}/custom-resource-state.yaml`;

export interface KsmIdentity {
  kubeconfig: string;
  /** The user name the API server logs its requests under. */
  username: string;
}

/** The shipped ClusterRole bound to the namespace's ServiceAccount, as a kubeconfig; unbound after the test. */
export async function ksmIdentity(namespace: string): Promise<KsmIdentity> {
  const identity = await serviceAccountIdentity(adminConfig(), { namespace, serviceAccount: KSM_SERVICE_ACCOUNT, rbacFile: KSM_RBAC_FILE, probeBy: 'list' });
  deleteAfterTest(`ClusterRoleBinding ${identity.binding}`, () => identity.dispose());
  return { kubeconfig: identity.kubeconfig, username: identity.username };
}

/** kube-state-metrics as `identity`, serving its metrics on 127.0.0.1:`port`. */
export async function startKubeStateMetrics(binary: string, identity: KsmIdentity, port: number, configFile: string = repoPath(KSM_CONFIG)): Promise<GoProcess> {
  return startGoProcess('kube-state-metrics', binary, [
    `--kubeconfig=${identity.kubeconfig}`,
    '--host=127.0.0.1',
    `--port=${port}`,
    '--telemetry-host=127.0.0.1',
    `--telemetry-port=${await freePort()}`,
    '--custom-resource-state-only=true',
    `--custom-resource-state-config-file=${configFile}`,
  ], {});
}
