import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { HTTP, type CloudEvent } from 'cloudevents';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { SHIPPED_BLOB, SHIPPED_NODE_ARGS, SHIPPED_NODE_OPTIONS } from '../../tools/bundle/shipped.mjs';
import { CONTROLLER_NAME } from './cluster.js';
import { repoRoot } from './repo.js';

// The function as a real process, exactly as Knative runs it: `node <entry>`
// with configuration in the environment, as the controller's ServiceAccount
// (token kubeconfig), with K_SINK pointing back at itself (a valid Knative
// wiring without a Broker: fan-out requests come back to the same process).

/** How the function is built and started: the shipped startup snapshot, the tsc output, or a bundle. */
export interface Variant {
  name: string;
  /** Entry point (a script, or a snapshot blob), relative to the repository root. */
  entry: string;
  /** What follows `node` (default: the entry alone). */
  args?: readonly string[];
  /** Extra environment (e.g. NODE_COMPILE_CACHE). */
  env: Record<string, string>;
  describe: string;
  /** Runs with SENDER_AUTH on: StartOptions.sender is the allowed sender, and posts carry its token. */
  senderAuth?: true;
}

/** `node <these>` starts the variant. */
export function variantArgs(v: Variant): readonly string[] {
  return v.args ?? [v.entry];
}

export const TSC_VARIANT: Variant = { name: 'tsc', entry: 'dist/functions/main.js', env: {}, describe: 'node dist/functions/main.js (tsc output, unbundled)' };
/** What the production image runs (Dockerfile, infra/), built by `npm run build:bundle`. */
export const SHIPPED_VARIANT: Variant = {
  name: 'shipped',
  entry: SHIPPED_BLOB,
  args: SHIPPED_NODE_ARGS,
  env: { NODE_OPTIONS: SHIPPED_NODE_OPTIONS },
  describe: `node ${SHIPPED_NODE_ARGS.join(' ')}, NODE_OPTIONS=${SHIPPED_NODE_OPTIONS} (the shipped startup snapshot)`,
};

export type { EventLogLine as LogLine } from '../../functions/server.js';
import type { EventLogLine as LogLine } from '../../functions/server.js';

export interface StartOptions {
  variant?: Variant;
  kubeconfig: string;
  /** WATCH_NAMESPACES; empty means all. */
  namespaces: string[];
  /** Default: the function's own URL (fan-out to itself). null: no K_SINK. */
  sink?: string | null;
  logLevel?: string;
  port?: number;
  /** Node options before the entry (e.g. --cpu-prof), for profiling. */
  nodeArgs?: string[];
  /** The allowed sender of a senderAuth variant: namespace/name and its Authorization header. */
  sender?: { serviceAccount: string; senderAuthorization: string };
}

export interface Memory {
  /** VmRSS: resident now. */
  rssKb: number;
  /** VmHWM: the peak resident size over the process's life. */
  hwmKb: number;
}

const live = new Set<ChildProcess>();
let exitHook = false;

function installExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  // A crashed bench must not leave function processes behind.
  process.on('exit', () => {
    for (const p of live) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  });
}

/** Memory of any process from /proc (Linux). */
export function readMemory(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') };
}

/** One GET /readyz on a fresh connection: true on 200. */
export function probeReady(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${url}/readyz`, { agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

export interface Posted {
  status: number;
  ms: number;
}

export class FunctionProcess {
  readonly url: string;
  readonly proc: ChildProcess;
  readonly variant: Variant;
  /** performance.now() just before spawn. */
  readonly spawnedAt: number;
  /** performance.now() when /readyz first answered 200. */
  readyAt = Number.NaN;
  /** Sent with every post (a senderAuth variant). */
  authorization: string | undefined;
  logs: LogLine[] = [];
  private stderr = '';
  /** Complete stderr lines, for diagnostics written there (the memory probe). */
  readonly stderrLines: string[] = [];
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  private readonly exited: Promise<void>;

  private constructor(proc: ChildProcess, url: string, variant: Variant, spawnedAt: number) {
    this.proc = proc;
    this.url = url;
    this.variant = variant;
    this.spawnedAt = spawnedAt;
    this.exited = new Promise((r) => proc.once('exit', () => r()));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      try {
        this.logs.push(JSON.parse(line) as LogLine);
      } catch {
        this.logs.push({ msg: line });
      }
    });
    proc.stderr!.on('data', (d: Buffer) => { this.stderr = (this.stderr + d.toString()).slice(-4000); });
    createInterface({ input: proc.stderr! }).on('line', (line) => { this.stderrLines.push(line); });
  }

  get pid(): number {
    return this.proc.pid ?? 0;
  }

  /** Spawn → /readyz 200, in ms. */
  get readyMs(): number {
    return this.readyAt - this.spawnedAt;
  }

  /** Spawns the function and resolves once /readyz answers 200 (polled every 2 ms). */
  static async start(opts: StartOptions): Promise<FunctionProcess> {
    installExitHook();
    const variant = opts.variant ?? SHIPPED_VARIANT;
    const port = opts.port ?? (await freePort());
    const url = `http://127.0.0.1:${port}`;
    const sink = opts.sink === undefined ? `${url}/` : opts.sink;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      KUBECONFIG: opts.kubeconfig,
      PORT: String(port),
      TEMPLATE_PATH: 'infra/templates/lb-deployment.yaml',
      WATCH_NAMESPACES: opts.namespaces.join(','),
      CONTROLLER_NAME,
      LOG_LEVEL: opts.logLevel ?? 'info',
      POD_NAME: 'bench',
      ...(sink ? { K_SINK: sink } : {}),
      ...variant.env,
    };
    if (variant.senderAuth && !opts.sender) throw new Error(`variant ${variant.name} needs a sender`);
    if (variant.senderAuth && opts.sender) env.SENDER_AUTH_ALLOWED = opts.sender.serviceAccount;
    const spawnedAt = performance.now();
    const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...variantArgs(variant)], { cwd: repoRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    const fn = new FunctionProcess(proc, url, variant, spawnedAt);
    if (variant.senderAuth) fn.authorization = opts.sender?.senderAuthorization;
    const deadline = spawnedAt + 60000;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`function (${variant.name}) exited ${proc.exitCode ?? proc.signalCode}: ${fn.stderr}`);
      if (await probeReady(url)) {
        fn.readyAt = performance.now();
        return fn;
      }
      if (performance.now() > deadline) {
        await fn.stop();
        throw new Error(`function (${variant.name}) not ready after 60 s: ${fn.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  memory(): Memory {
    return readMemory(this.pid);
  }

  /** POSTs a CloudEvent in binary mode; resolves with the status and the round-trip time. */
  post(event: CloudEvent<unknown>, path = '/'): Promise<Posted> {
    const message = HTTP.binary(event);
    const body = typeof message.body === 'string' ? message.body : JSON.stringify(message.body);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(message.headers)) headers[k] = String(v);
    headers['content-length'] = String(Buffer.byteLength(body));
    if (this.authorization) headers.authorization = this.authorization;
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const req = request(`${this.url}${path}`, { method: 'POST', headers, agent: this.agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The "event handled" log line of an event (its outcome, the Gateway count). */
  async handled(eventId: string, timeoutMs = 10000): Promise<LogLine> {
    return waitFor(`the log line of event ${eventId}`, () => this.logs.find((l) => l.eventId === eventId), { timeoutMs, intervalMs: 5 });
  }

  clearLogs(): void {
    this.logs = [];
  }

  /** SIGTERM (the function drains and exits), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    this.agent.destroy();
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 30000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}
