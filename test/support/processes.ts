import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SHIPPED_NODE_ARGS, SHIPPED_NODE_OPTIONS } from '../../tools/bundle/shipped.mjs';
import { ensureKnativeAssets } from '../../tools/knative/build.mjs';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { clusterInfo } from './cluster.js';

// Real processes for end-to-end tests: the compiled function server and the
// Knative ApiServerSource receive adapter, each with its own identity.

/** A kubeconfig file that authenticates with a bearer token. */
export function writeTokenKubeconfig(token: string): string {
  const info = clusterInfo();
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-kc-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: info.server, 'certificate-authority': info.caCert } }],
    users: [{ name: 'sa', user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'sa' } }],
    'current-context': 'test',
  }));
  return path;
}

export type { EventLogLine as LogLine } from '../../functions/server.js';
import type { EventLogLine as LogLine } from '../../functions/server.js';

/**
 * What the production image runs: `node <SHIPPED_NODE_ARGS>` (the startup
 * snapshot) with NODE_OPTIONS. `npm test` builds it before jest starts, with
 * the same Node that runs jest (a snapshot only starts with the Node that built it).
 */
export const SHIPPED_ARGS: readonly string[] = SHIPPED_NODE_ARGS;
export const SHIPPED_ENV: Readonly<Record<string, string>> = { NODE_OPTIONS: SHIPPED_NODE_OPTIONS };

export interface FunctionProcess {
  url: string;
  port: number;
  proc: ChildProcess;
  logs: LogLine[];
  /** SIGKILL, no cleanup: the crash case. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the shipped function on a port of its own (never one a dead process
 * had: put a stable-address.ts front before it when senders need a fixed URL).
 */
export async function startFunctionProcess(env: Record<string, string>): Promise<FunctionProcess> {
  const p = await freePort();
  const url = `http://127.0.0.1:${p}`;
  // The shipped artifact, started as the image starts it (npm run build:bundle).
  const proc = spawn(process.execPath, [...SHIPPED_ARGS], {
    env: { PATH: process.env.PATH ?? '', ...SHIPPED_ENV, LOG_LEVEL: 'info', TEMPLATE_PATH: 'infra/templates/lb-deployment.yaml', PORT: String(p), K_SINK: `${url}/`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  let stderr = '';
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as LogLine);
    } catch {
      logs.push({ msg: line });
    }
  });
  proc.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  await waitFor(`function server on ${url} to be ready`, async () => {
    if (proc.exitCode !== null) throw new Error(`function exited ${proc.exitCode}: ${stderr}`);
    const res = await fetch(`${url}/readyz`).catch(() => undefined);
    return res?.status === 200 ? true : undefined;
  }, { timeoutMs: 30000, intervalMs: 50 });
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    await exited;
  };
  return { url, port: p, proc, logs, kill9: () => stop('SIGKILL'), stop: () => stop('SIGTERM') };
}

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
