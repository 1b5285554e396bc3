import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../functions/kube/kubeconfig.js';

// The cluster and the namespace, resolved as kubectl resolves them: the file
// from --kubeconfig, else KUBECONFIG, else ~/.kube/config, else the Pod's
// ServiceAccount; the context from --context, else the current one; the
// namespace from -n, else the context's, else "default"; -A means every one.

export interface Connection {
  kc: KubeConfig;
  /** undefined: every namespace. */
  namespace: string | undefined;
}

export function connect(opts: { kubeconfig?: string | undefined; context?: string | undefined; namespace?: string | undefined; allNamespaces: boolean }, env: Record<string, string | undefined> = process.env): Connection {
  const kc = loadKubeConfig(opts.kubeconfig === undefined ? env : { ...env, KUBECONFIG: opts.kubeconfig }, undefined, opts.context === undefined ? {} : { context: opts.context });
  if (opts.allNamespaces) return { kc, namespace: undefined };
  const fromContext = kc.getContextObject(kc.getCurrentContext())?.namespace;
  return { kc, namespace: opts.namespace ?? (fromContext || 'default') };
}
