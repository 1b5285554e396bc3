import { readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, loadAllYaml, type KubeConfig, type V1ClusterRole, type V1Role } from '@kubernetes/client-node';
import { waitFor } from '../controlplane/wait-for.js';
import { tokenKubeConfig, writeTokenKubeconfig } from './kubeconfig.js';
import { repoPath } from './repo-root.js';

// The identities the function and the event source have in production, made
// on a control plane of ours: a ServiceAccount in a namespace, bound to the
// ClusterRole shipped in infra/, with a token the API server issued
// (TokenRequest). The tests, the bench and `npm start` all run the function
// as this identity, so a missing permission shows up there and not only in a
// cluster. Plain client-node: nothing here depends on jest.

/** The function's ServiceAccount (infra/rbac/controller-serviceaccount.yaml) and its ClusterRole. */
export const CONTROLLER_SERVICE_ACCOUNT = 'meridio-2-gateway-controller';
export const CONTROLLER_RBAC_FILE = 'infra/rbac/controller-clusterrole.yaml';
/** The ApiServerSource's ServiceAccount and ClusterRole (infra/knative). */
export const EVENT_SOURCE_SERVICE_ACCOUNT = 'meridio-2-apiserversource';
export const EVENT_SOURCE_RBAC_FILE = 'infra/knative/apiserversource-rbac.yaml';

/** The document of `kind` in a shipped RBAC file (path relative to the repository root). */
export function shippedRbacDocument<K extends 'ClusterRole' | 'Role'>(file: string, kind: K): K extends 'Role' ? V1Role : V1ClusterRole {
  const docs = loadAllYaml(readFileSync(repoPath(file), 'utf8')) as Array<{ kind?: string } | null>;
  const doc = docs.find((d) => d?.kind === kind);
  if (!doc) throw new Error(`no ${kind} in ${file}`);
  return doc as K extends 'Role' ? V1Role : V1ClusterRole;
}

/** The ClusterRole document of a shipped RBAC file. */
export function shippedClusterRole(file: string): V1ClusterRole {
  return shippedRbacDocument(file, 'ClusterRole');
}

function ignoring(code: number): (err: unknown) => void {
  return (err) => {
    if (!(err instanceof ApiException && err.code === code)) throw err;
  };
}

/** Creates the ServiceAccount if it is missing and asks the API server for a token of it (for `audiences`; none: the API server's own). */
export async function serviceAccountToken(admin: KubeConfig, namespace: string, name: string, seconds = 3600, audiences: string[] = []): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch(ignoring(409));
  const issued = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences, expirationSeconds: seconds } } });
  const token = issued.status?.token;
  if (!token) throw new Error(`the API server issued no token for ${namespace}/${name}`);
  return token;
}

/** The shipped ClusterRole as it is in the file now (created, or replaced when an older copy is there). */
async function installClusterRole(rbac: RbacAuthorizationV1Api, role: V1ClusterRole): Promise<string> {
  const name = role.metadata?.name ?? '';
  try {
    await rbac.createClusterRole({ body: role });
  } catch (err) {
    ignoring(409)(err);
    const live = await rbac.readClusterRole({ name });
    await rbac.replaceClusterRole({ name, body: { ...role, metadata: { ...role.metadata, resourceVersion: live.metadata?.resourceVersion } } });
  }
  return name;
}

/**
 * The authorizer learns of new bindings through an informer: until it has,
 * the identity's first requests would be forbidden. The function's and the
 * event source's roles may get GatewayClasses (a 404 for one that does not
 * exist means "allowed"); kube-state-metrics' may only list them (`list`).
 */
export async function waitUntilAuthorized(kc: KubeConfig, what: string, probeBy: 'get' | 'list' = 'get'): Promise<void> {
  const probe = kc.makeApiClient(CustomObjectsApi);
  const gatewayClasses = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses' };
  await waitFor(`the ClusterRoleBinding of ${what} to take effect`, async () => {
    try {
      if (probeBy === 'list') await probe.listClusterCustomObject({ ...gatewayClasses, limit: 1 });
      else await probe.getClusterCustomObject({ ...gatewayClasses, name: 'rbac-probe' });
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return true;
      if (err instanceof ApiException && err.code === 403) return undefined;
      throw err;
    }
  }, { timeoutMs: 30000, intervalMs: 100 });
}

export interface ServiceAccountIdentity {
  namespace: string;
  serviceAccount: string;
  /** What the API server (and its audit log) calls this identity. */
  username: string;
  /** The identity in this process. */
  kc: KubeConfig;
  /** A kubeconfig file of the identity, for KUBECONFIG of a process. */
  kubeconfig: string;
  /** The ClusterRoleBinding made for it (`<role>-<namespace>`). */
  binding: string;
  /** Deletes the binding and the kubeconfig file (a shared control plane outlives the identity). */
  dispose(): Promise<void>;
}

/**
 * `serviceAccount` in `namespace`, bound to the ClusterRole of the shipped
 * `rbacFile`, usable once this resolves. The token lives `tokenSeconds`.
 */
export async function serviceAccountIdentity(admin: KubeConfig, opts: { namespace: string; serviceAccount: string; rbacFile: string; tokenSeconds?: number; probeBy?: 'get' | 'list' }): Promise<ServiceAccountIdentity> {
  const { namespace, serviceAccount } = opts;
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const role = await installClusterRole(rbac, shippedClusterRole(opts.rbacFile));
  const token = await serviceAccountToken(admin, namespace, serviceAccount, opts.tokenSeconds);
  const binding = `${role}-${namespace}`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
  });
  const kubeconfig = writeTokenKubeconfig(admin, token);
  const dispose = async (): Promise<void> => {
    rmSync(dirname(kubeconfig), { recursive: true, force: true });
    await rbac.deleteClusterRoleBinding({ name: binding }).catch(ignoring(404));
  };
  const kc = tokenKubeConfig(admin, token, serviceAccount);
  try {
    await waitUntilAuthorized(kc, `${namespace}/${serviceAccount}`, opts.probeBy);
  } catch (err) {
    await dispose();
    throw err;
  }
  return { namespace, serviceAccount, username: `system:serviceaccount:${namespace}:${serviceAccount}`, kc, kubeconfig, binding, dispose };
}

/** The function's identity: infra/rbac, only what a reconcile needs, no watch. */
export function controllerIdentity(admin: KubeConfig, namespace: string, tokenSeconds?: number): Promise<ServiceAccountIdentity> {
  return serviceAccountIdentity(admin, { namespace, serviceAccount: CONTROLLER_SERVICE_ACCOUNT, rbacFile: CONTROLLER_RBAC_FILE, ...(tokenSeconds ? { tokenSeconds } : {}) });
}

/** The ApiServerSource adapter's identity (get, list, watch on the watched resources). */
export function eventSourceIdentity(admin: KubeConfig, namespace: string, tokenSeconds?: number): Promise<ServiceAccountIdentity> {
  return serviceAccountIdentity(admin, { namespace, serviceAccount: EVENT_SOURCE_SERVICE_ACCOUNT, rbacFile: EVENT_SOURCE_RBAC_FILE, ...(tokenSeconds ? { tokenSeconds } : {}) });
}
