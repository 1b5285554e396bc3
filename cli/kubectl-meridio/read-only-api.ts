import type { KubeApi } from '../../functions/kube/kube-api.js';

// The plugin's API client can read only: every write of KubeApi is replaced
// by one that refuses before a request is made. The shipped reader role
// (infra/rbac/plugin-reader-clusterrole.yaml) refuses them on the server
// too; this keeps a bug in a verb from even trying.

const WRITES = [
  'createDeployment',
  'replaceDeployment',
  'annotateDeployment',
  'createPodDisruptionBudget',
  'replacePodDisruptionBudget',
  'replaceGatewayStatus',
  'replaceGatewayClassStatus',
  'createEvent',
  'replaceEvent',
] as const satisfies readonly (keyof KubeApi)[];

export class WriteRefused extends Error {
  override readonly name = 'WriteRefused';
}

export function readOnlyApi(api: KubeApi): KubeApi {
  const refuse = (method: string) => (): Promise<never> => Promise.reject(new WriteRefused(`kubectl-meridio is read-only: ${method} refused`));
  const guarded: KubeApi = { ...api, withSignal: (signal) => readOnlyApi(api.withSignal(signal)) };
  for (const method of WRITES) Object.assign(guarded, { [method]: refuse(method) });
  return guarded;
}
