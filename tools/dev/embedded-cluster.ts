import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { ClusterInfo } from '../controlplane/control-plane.js';
import { waitFor } from '../controlplane/wait-for.js';
import { applyFiles, applyObjects, kustomizationFiles } from './apply-manifests.js';

// What `npm start` sets up on the embedded control plane so that everything
// runs with the identities it has in production: the function as its
// ServiceAccount bound to the ClusterRole in infra/rbac, the event source as
// the ApiServerSource's account from infra/knative (so a missing permission
// shows up here, not only in a cluster), and the demo objects of
// infra/samples applied by the admin, as a user would.

/** The binding in infra/rbac/controller-serviceaccount.yaml names this namespace and account. */
export const CONTROLLER_NAMESPACE = 'meridio-2-system';
export const CONTROLLER_SERVICE_ACCOUNT = 'meridio-2-gateway-controller';
/** infra/knative/apiserversource-rbac.yaml binds this account, in the same namespace. */
export const EVENT_SOURCE_SERVICE_ACCOUNT = 'meridio-2-apiserversource';

// Long enough for a dev session; the token is not renewed.
const TOKEN_SECONDS = 7 * 24 * 3600;

function kubeConfigFor(info: ClusterInfo, user: { name: string; token?: string; certData?: string; keyData?: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'embedded', server: info.server, caData: readFileSync(info.caCert).toString('base64'), skipTLSVerify: false }],
    users: [user],
    contexts: [{ name: 'embedded', cluster: 'embedded', user: user.name }],
    currentContext: 'embedded',
  });
  return kc;
}

export function adminKubeConfig(info: ClusterInfo): KubeConfig {
  return kubeConfigFor(info, {
    name: 'admin',
    certData: readFileSync(info.admin.cert).toString('base64'),
    keyData: readFileSync(info.admin.key).toString('base64'),
  });
}

/**
 * Applies the RBAC files (ServiceAccount, ClusterRole, binding) into
 * CONTROLLER_NAMESPACE and returns a kubeconfig authenticating as the
 * ServiceAccount with a token the API server issued (TokenRequest).
 */
async function serviceAccountIdentity(admin: KubeConfig, info: ClusterInfo, rbacFiles: string[], serviceAccount: string): Promise<KubeConfig> {
  await applyObjects(admin, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONTROLLER_NAMESPACE } }], 'controller namespace');
  await applyFiles(admin, rbacFiles, CONTROLLER_NAMESPACE);
  const issued = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: CONTROLLER_NAMESPACE,
    name: serviceAccount,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const token = issued.status?.token;
  if (!token) throw new Error(`the API server issued no token for ${CONTROLLER_NAMESPACE}/${serviceAccount}`);
  const kc = kubeConfigFor(info, { name: serviceAccount, token });
  // The authorizer learns of new bindings through an informer: until it has,
  // the first requests would be forbidden. Both identities may get
  // GatewayClasses; a 404 for one that does not exist means allowed.
  const probe = kc.makeApiClient(CustomObjectsApi);
  await waitFor(`the ClusterRoleBinding of ${serviceAccount} to take effect`, async () => {
    try {
      await probe.getClusterCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', name: 'rbac-probe' });
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return true;
      throw err;
    }
  });
  return kc;
}

/** The function's identity: infra/rbac (only what a reconcile needs, no watch). */
export function installControllerIdentity(admin: KubeConfig, info: ClusterInfo, root: string): Promise<KubeConfig> {
  const rbac = join(root, 'infra', 'rbac');
  return serviceAccountIdentity(admin, info, [join(rbac, 'controller-clusterrole.yaml'), join(rbac, 'controller-serviceaccount.yaml')], CONTROLLER_SERVICE_ACCOUNT);
}

/** The ApiServerSource adapter's identity (get, list, watch on the five resources), used by the local stand-in and the table. */
export function installEventSourceIdentity(admin: KubeConfig, info: ClusterInfo, root: string): Promise<KubeConfig> {
  return serviceAccountIdentity(admin, info, [join(root, 'infra', 'knative', 'apiserversource-rbac.yaml')], EVENT_SOURCE_SERVICE_ACCOUNT);
}

/** infra/samples, in its kustomization's order (Namespace first), as the admin. */
export function applySamples(admin: KubeConfig, root: string): Promise<string[]> {
  return applyFiles(admin, kustomizationFiles(join(root, 'infra', 'samples')));
}
