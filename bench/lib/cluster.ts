import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api, loadYaml, type V1ClusterRole } from '@kubernetes/client-node';
import { AuditLog } from '../../tools/controlplane/audit-log.js';
import type { ClusterInfo } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { repoPath } from './repo.js';

// A connection to a running control plane for the benchmarks: the bench's own
// (ControlPlane.start()) or the shared one of the jest run. Everything here is
// plain client-node; nothing depends on jest.

export const CONTROLLER_NAME = 'meridio-2.nordix.org/gateway-controller';
export const CONTROLLER_SA = 'meridio-2-gateway-controller';
const CLUSTER_ROLE_FILE = 'infra/rbac/controller-clusterrole.yaml';

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
  const admin = new KubeConfig();
  admin.loadFromOptions({
    clusters: [{ name: 'bench', server: info.server, caData: readFileSync(info.caCert).toString('base64'), skipTLSVerify: false }],
    users: [{ name: 'admin', certData: readFileSync(info.admin.cert).toString('base64'), keyData: readFileSync(info.admin.key).toString('base64') }],
    contexts: [{ name: 'bench', cluster: 'bench', user: 'admin' }],
    currentContext: 'bench',
  });
  const core = admin.makeApiClient(CoreV1Api);
  // Barriers: a GET of a ConfigMap with a unique name, answered 404 and audited.
  const audit = new AuditLog(info.auditLog, async (marker) => {
    try {
      await core.readNamespacedConfigMap({ namespace: 'default', name: marker });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
    }
  });
  return { info, admin, audit, controllerManager: opts.controllerManager, namespaces: [] };
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

/** The controller's identity: a ServiceAccount bound to the shipped ClusterRole, and a token kubeconfig file for the function process. */
/** The audience of the tokens the bench identity presents as a sender (the shipped Triggers' audience). */
export const SENDER_AUDIENCE = 'serving.knative.dev/service/meridio-2-system/meridio-2-gateway-controller';

export interface ControllerIdentity {
  namespace: string;
  username: string;
  /** Path of a kubeconfig that authenticates as the ServiceAccount (a TokenRequest token). */
  kubeconfig: string;
  /** The same identity in this process, for the bare GET of P2. */
  kc: KubeConfig;
  /** namespace/name of the ServiceAccount, as SENDER_AUTH_ALLOWED names it. */
  serviceAccount: string;
  /** An Authorization header as the Broker's filter would send it: a token of this ServiceAccount for SENDER_AUDIENCE. */
  senderAuthorization: string;
  dispose(): Promise<void>;
}

export async function controllerIdentity(c: BenchCluster, namespace: string): Promise<ControllerIdentity> {
  const rbac = c.admin.makeApiClient(RbacAuthorizationV1Api);
  const core = c.admin.makeApiClient(CoreV1Api);
  const role = loadYaml<V1ClusterRole>(readFileSync(repoPath(CLUSTER_ROLE_FILE), 'utf8'));
  const roleName = role.metadata?.name ?? CONTROLLER_SA;
  try {
    await rbac.createClusterRole({ body: role });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 409)) throw err;
    const live = await rbac.readClusterRole({ name: roleName });
    await rbac.replaceClusterRole({ name: roleName, body: { ...role, metadata: { ...role.metadata, resourceVersion: live.metadata?.resourceVersion } } });
  }
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: CONTROLLER_SA } } });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 409)) throw err;
  }
  const bindingName = `${roleName}-${namespace}`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: bindingName },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects: [{ kind: 'ServiceAccount', name: CONTROLLER_SA, namespace }],
    },
  });
  const tr = await core.createNamespacedServiceAccountToken({ namespace, name: CONTROLLER_SA, body: { spec: { audiences: [], expirationSeconds: 4 * 3600 } } });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token issued for ${namespace}/${CONTROLLER_SA}`);
  const sender = await core.createNamespacedServiceAccountToken({ namespace, name: CONTROLLER_SA, body: { spec: { audiences: [SENDER_AUDIENCE], expirationSeconds: 4 * 3600 } } });
  if (!sender.status?.token) throw new Error(`no sender token issued for ${namespace}/${CONTROLLER_SA}`);

  const dir = mkdtempSync(join(tmpdir(), 'meridio2-bench-kc-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bench', cluster: { server: c.info.server, 'certificate-authority': c.info.caCert } }],
    users: [{ name: 'sa', user: { token } }],
    contexts: [{ name: 'bench', context: { cluster: 'bench', user: 'sa' } }],
    'current-context': 'bench',
  }));
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);

  // The authorizer learns of new bindings through an informer: wait until it
  // allows a read (404 for a class that does not exist means "allowed").
  const probe = kc.makeApiClient(CustomObjectsApi);
  await waitFor('the controller ClusterRoleBinding to take effect', async () => {
    try {
      await probe.getClusterCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', name: 'rbac-probe' });
      return true;
    } catch (err) {
      return err instanceof ApiException && err.code === 404 ? true : undefined;
    }
  }, { timeoutMs: 30000, intervalMs: 100 });

  return {
    namespace,
    username: `system:serviceaccount:${namespace}:${CONTROLLER_SA}`,
    kubeconfig,
    kc,
    serviceAccount: `${namespace}/${CONTROLLER_SA}`,
    senderAuthorization: `Bearer ${sender.status.token}`,
    dispose: async () => {
      rmSync(dir, { recursive: true, force: true });
      try {
        await rbac.deleteClusterRoleBinding({ name: bindingName });
      } catch (err) {
        if (!(err instanceof ApiException && err.code === 404)) throw err;
      }
    },
  };
}
