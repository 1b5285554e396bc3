import { randomBytes } from 'node:crypto';
import { ApiException, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_CONTROLLER_NAME } from '../../api/names.js';
import type { AuditLog } from '../../tools/controlplane/audit-log.js';
import type { ClusterInfo } from '../../tools/controlplane/control-plane.js';
import { adminAuditLog, adminKubeConfig } from '../../tools/harness/kubeconfig.js';

// A connection to a running control plane for the benchmarks: the bench's own
// (ControlPlane.start()) or the shared one of the jest run. Everything here is
// plain client-node; nothing depends on jest. The controller's identity is
// the one the tests and `npm start` use (tools/harness/service-account-identity.ts).

/** The function's default controllerName, which the bench's GatewayClass names. */
export const CONTROLLER_NAME = DEFAULT_CONTROLLER_NAME;

export interface BenchCluster {
  info: ClusterInfo;
  admin: KubeConfig;
  audit: AuditLog;
  /** Whether kube-controller-manager runs (Deployment status, garbage collection, namespace deletion). */
  controllerManager: boolean;
  /** Every namespace the benchmarks created, for cleanup on a shared cluster. */
  namespaces: string[];
}

export function connect(info: ClusterInfo, opts: { controllerManager: boolean }): BenchCluster {
  const admin = adminKubeConfig(info);
  return { info, admin, audit: adminAuditLog(info, admin), controllerManager: opts.controllerManager, namespaces: [] };
}

export async function createNamespace(c: BenchCluster, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await c.admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  c.namespaces.push(name);
  return name;
}

export async function deleteNamespace(c: BenchCluster, name: string): Promise<void> {
  try {
    await c.admin.makeApiClient(CoreV1Api).deleteNamespace({ name });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  }
}
