import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { describeError, StartupError } from '../startup-error.js';

// The kubeconfig, from where client-go looks (KUBECONFIG, ~/.kube/config,
// the Pod's ServiceAccount), checked at start: a missing or malformed one
// stops the process with one line naming the file, instead of a stack trace
// or, with none at all, a silent fallback to http://localhost:8080 that
// fails at the first event.

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export type KubeconfigSource = { kind: 'files'; paths: string[]; via: 'KUBECONFIG' | 'home' } | { kind: 'in-cluster' };

export interface SourceProbe {
  exists(path: string): boolean;
  home(): string;
}

const REAL: SourceProbe = { exists: existsSync, home: homedir };

/** Where the kubeconfig will come from, in client-go's order; undefined when nowhere. */
export function kubeconfigSource(env: Record<string, string | undefined>, probe: SourceProbe = REAL): KubeconfigSource | undefined {
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((p) => p !== '');
  if (listed.length > 0) return { kind: 'files', paths: listed, via: 'KUBECONFIG' };
  const home = join(probe.home(), '.kube', 'config');
  if (probe.exists(home)) return { kind: 'files', paths: [home], via: 'home' };
  if (probe.exists(SERVICE_ACCOUNT_TOKEN)) return { kind: 'in-cluster' };
  return undefined;
}

function inputName(source: KubeconfigSource): string {
  if (source.kind === 'in-cluster') return 'kubeconfig (the Pod\'s ServiceAccount)';
  return `kubeconfig ${source.paths.join(delimiter)}${source.via === 'KUBECONFIG' ? ' (KUBECONFIG)' : ''}`;
}

/** `context`: use this context instead of the current one (kubectl's --context). */
export function loadKubeConfig(env: Record<string, string | undefined> = process.env, probe: SourceProbe = REAL, options: { context?: string } = {}): KubeConfig {
  const source = kubeconfigSource(env, probe);
  if (source === undefined) {
    throw new StartupError('kubeconfig', `none found: KUBECONFIG is not set, ${join(probe.home(), '.kube', 'config')} does not exist, and no ServiceAccount token is mounted (${SERVICE_ACCOUNT_TOKEN})`);
  }
  const input = inputName(source);
  if (source.kind === 'files') {
    const missing = source.paths.find((p) => !probe.exists(p));
    if (missing !== undefined) throw new StartupError(input, `${missing} does not exist`);
  }
  const kc = new KubeConfig();
  try {
    kc.loadFromDefault();
  } catch (err) {
    throw new StartupError(input, `cannot be read as a kubeconfig: ${describeError(err)}`, { cause: err });
  }
  if (options.context !== undefined) {
    if (kc.getContextObject(options.context) === null) throw new StartupError(input, `has no context "${options.context}"`);
    kc.setCurrentContext(options.context);
  }
  const context = kc.getCurrentContext();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new StartupError(input, context ? `its current context "${context}" names no cluster it defines` : 'has no current context');
  try {
    new URL(cluster.server);
  } catch {
    throw new StartupError(input, `cluster "${cluster.name}": server "${cluster.server}" is not a URL`);
  }
  return kc;
}
