import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { controllerIdentity, eventSourceIdentity, type ServiceAccountIdentity } from '../harness/service-account-identity.js';
import { applyFiles, applyObjects, kustomizationFiles } from './apply-manifests.js';

// What `npm start` sets up on the embedded control plane so that everything
// runs with the identities it has in production: the function as its
// ServiceAccount bound to the ClusterRole in infra/rbac, the event source as
// the ApiServerSource's account from infra/knative (so a missing permission
// shows up here, not only in a cluster), and the demo objects of
// infra/samples applied by the admin, as a user would.

/** Where infra/ installs the controller (infra/rbac/controller-serviceaccount.yaml). */
export const CONTROLLER_NAMESPACE = 'meridio-2-system';

// Long enough for a dev session; the token is not renewed.
const TOKEN_SECONDS = 7 * 24 * 3600;

async function identityIn(admin: KubeConfig, make: (admin: KubeConfig, namespace: string, tokenSeconds: number) => Promise<ServiceAccountIdentity>): Promise<KubeConfig> {
  await applyObjects(admin, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONTROLLER_NAMESPACE } }], 'controller namespace');
  return (await make(admin, CONTROLLER_NAMESPACE, TOKEN_SECONDS)).kc;
}

/** The function's identity: infra/rbac (only what a reconcile needs, no watch). */
export function installControllerIdentity(admin: KubeConfig): Promise<KubeConfig> {
  return identityIn(admin, controllerIdentity);
}

/** The ApiServerSource adapter's identity (get, list, watch on the five resources), used by the local stand-in and the table. */
export function installEventSourceIdentity(admin: KubeConfig): Promise<KubeConfig> {
  return identityIn(admin, eventSourceIdentity);
}

/** infra/samples, in its kustomization's order (Namespace first), as the admin. */
export function applySamples(admin: KubeConfig, root: string): Promise<string[]> {
  return applyFiles(admin, kustomizationFiles(join(root, 'infra', 'samples')));
}
