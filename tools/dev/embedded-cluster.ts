import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { ClusterInfo } from '../controlplane/control-plane.js';
import { waitFor } from '../controlplane/wait-for.js';
import { applyFiles, applyObjects, kustomizationFiles } from './apply-manifests.js';

// What `npm start` sets up on the embedded control plane so that the function
// runs as it does in production: under its own ServiceAccount, bound to the
// ClusterRole shipped in infra/rbac (so a missing permission shows up here,
// not only in a cluster), with the demo objects of infra/samples applied by
// the admin, as a user would.

/** The binding in infra/rbac/controller-serviceaccount.yaml names this namespace and account. */
export const CONTROLLER_NAMESPACE = 'meridio-2-system';
export const CONTROLLER_SERVICE_ACCOUNT = 'meridio-2-gateway-controller';

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
 * Creates the controller's namespace, ServiceAccount, ClusterRole and binding
 * from infra/rbac, and returns a kubeconfig authenticating as that account
 * with a token the API server issued (TokenRequest).
 */
export async function installControllerIdentity(admin: KubeConfig, info: ClusterInfo, root: string): Promise<KubeConfig> {
  await applyObjects(admin, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONTROLLER_NAMESPACE } }], 'controller namespace');
  const rbac = join(root, 'infra', 'rbac');
  await applyFiles(admin, [join(rbac, 'controller-clusterrole.yaml'), join(rbac, 'controller-serviceaccount.yaml')], CONTROLLER_NAMESPACE);
  const issued = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: CONTROLLER_NAMESPACE,
    name: CONTROLLER_SERVICE_ACCOUNT,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const token = issued.status?.token;
  if (!token) throw new Error(`the API server issued no token for ${CONTROLLER_NAMESPACE}/${CONTROLLER_SERVICE_ACCOUNT}`);
  const kc = kubeConfigFor(info, { name: CONTROLLER_SERVICE_ACCOUNT, token });
  // The authorizer learns of new bindings through an informer: until it has,
  // the first reconciles would be forbidden. A 404 for a class that does not
  // exist means the request was allowed.
  const probe = kc.makeApiClient(CustomObjectsApi);
  await waitFor('the controller ClusterRoleBinding to take effect', async () => {
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

/** infra/samples, in its kustomization's order (Namespace first), as the admin. */
export function applySamples(admin: KubeConfig, root: string): Promise<string[]> {
  return applyFiles(admin, kustomizationFiles(join(root, 'infra', 'samples')));
}
