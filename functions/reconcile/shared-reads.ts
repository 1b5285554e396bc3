import type { KubeApi } from '../kube/kube-api.js';

// The reads of one reconcile request that names several Gateways of one
// namespace (a fan-out batch, docs/design.md §2): the class, the
// GatewayConfiguration, the namespace's routes and the namespaces are the
// same for all of them, so each is read once and shared; the Gateway, its
// Deployment and its PDB are each Gateway's own. Every object is still read
// in the invocation that plans from it; only a first attempt that did not
// wait in the coalescer uses them (reconcile-targets.ts): an attempt after a
// conflict, or a run that waited behind another, reads afresh.

/** What observe reads through: the API client itself, or the shared reads of a batch. */
export type ObserveReads = Pick<KubeApi, 'getGateway' | 'getDeployment' | 'getPodDisruptionBudget' | 'getGatewayClass' | 'getGatewayConfiguration' | 'listL34Routes' | 'listNamespaces'>;

export function sharedReads(api: KubeApi): ObserveReads {
  const made = new Map<string, Promise<unknown>>();
  const once = <T>(key: string, read: () => Promise<T>): Promise<T> => {
    const had = made.get(key) as Promise<T> | undefined;
    if (had) return had;
    const reading = read();
    made.set(key, reading);
    return reading;
  };
  return {
    getGateway: (namespace, name) => api.getGateway(namespace, name),
    getDeployment: (namespace, name) => api.getDeployment(namespace, name),
    getPodDisruptionBudget: (namespace, name) => api.getPodDisruptionBudget(namespace, name),
    getGatewayClass: (name) => once(`class ${name}`, () => api.getGatewayClass(name)),
    getGatewayConfiguration: (namespace, name) => once(`configuration ${namespace}/${name}`, () => api.getGatewayConfiguration(namespace, name)),
    listL34Routes: (namespace) => once(`routes ${namespace ?? '*'}`, () => api.listL34Routes(namespace)),
    listNamespaces: () => once('namespaces', () => api.listNamespaces()),
  };
}
