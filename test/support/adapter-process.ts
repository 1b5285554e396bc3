import { spawn, type ChildProcess } from 'node:child_process';
import { ensureKnativeAssets } from '../../tools/knative/build.mjs';

// The Knative ApiServerSource receive adapter as a real process, for
// end-to-end tests. The function process is tools/harness/function-process.ts
// (shared with the bench).

export interface AdapterProcess {
  proc: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

export interface AdapterResource {
  group: string;
  version: string;
  resource: string;
  selector?: string;
}

/**
 * The real ApiServerSource receive adapter, out of cluster, in Resource mode,
 * delivering straight to `sink`.
 */
export async function startAdapter(opts: { kubeconfig: string; sink: string; namespaces: string[]; resources: AdapterResource[]; env?: Record<string, string> }): Promise<AdapterProcess> {
  const { adapter } = await ensureKnativeAssets();
  const config = {
    namespaces: opts.namespaces,
    allNamespaces: opts.namespaces.length === 0,
    resources: opts.resources.map((r) => ({ gvr: { Group: r.group, Version: r.version, Resource: r.resource }, ...(r.selector ? { selector: r.selector } : {}) })),
    mode: 'Resource',
  };
  const proc = spawn(adapter, [`--kubeconfig=${opts.kubeconfig}`], {
    env: {
      PATH: process.env.PATH ?? '',
      K_SINK: opts.sink,
      K_SOURCE_CONFIG: JSON.stringify(config),
      NAME: 'meridio-2-gateway-events',
      NAMESPACE: opts.namespaces[0] ?? 'default',
      SYSTEM_NAMESPACE: opts.namespaces[0] ?? 'default',
      PROFILING_PORT: '0',
      K_LOGGING_CONFIG: JSON.stringify({ 'zap-logger-config': JSON.stringify({ level: 'info', encoding: 'json', outputPaths: ['stdout'], errorOutputPaths: ['stderr'] }) }),
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out = (out + d.toString()).slice(-20000); });
  proc.stderr!.on('data', (d: Buffer) => { out = (out + d.toString()).slice(-20000); });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
