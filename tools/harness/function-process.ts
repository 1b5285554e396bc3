import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import type { CloudEvent } from 'cloudevents';
import type { EventLogLine as LogLine } from '../../functions/server.js';
import { SHIPPED_BLOB, SHIPPED_NODE_ARGS, SHIPPED_NODE_OPTIONS } from '../bundle/shipped.mjs';
import { freePort } from '../controlplane/free-port.js';
import { waitFor } from '../controlplane/wait-for.js';
import { sendEvent } from '../dev/post-event.js';
import { repoRoot } from './repo-root.js';

// The function as a real process, exactly as Knative runs it: the shipped
// startup snapshot started as the image starts it (tools/bundle/shipped.mts),
// configuration in the environment, as the controller's ServiceAccount (a
// token kubeconfig), on a port of its own, with K_SINK pointing back at itself
// unless told otherwise (a valid Knative wiring without a Broker: fan-out
// requests come back to the same process). The process-level tests and the
// bench both start it here; the bench also starts other builds (variants).

export type { LogLine };

/** How the function is built and started: the shipped startup snapshot unless a bench variant says otherwise. */
export interface Variant {
  name: string;
  /** Entry point (a script, or a snapshot blob), relative to the repository root. */
  entry: string;
  /** What follows `node` (default: the entry alone). */
  args?: readonly string[];
  /** Extra environment (e.g. NODE_OPTIONS, NODE_COMPILE_CACHE). */
  env: Record<string, string>;
  describe: string;
}

/** What the production image runs (Dockerfile, infra/), built by `npm run build:bundle`. */
export const SHIPPED_VARIANT: Variant = {
  name: 'shipped',
  entry: SHIPPED_BLOB,
  args: SHIPPED_NODE_ARGS,
  env: { NODE_OPTIONS: SHIPPED_NODE_OPTIONS },
  describe: `node ${SHIPPED_NODE_ARGS.join(' ')}, NODE_OPTIONS=${SHIPPED_NODE_OPTIONS} (the shipped startup snapshot)`,
};

/** `node <these>` starts the variant. */
export function variantArgs(v: Variant): readonly string[] {
  return v.args ?? [v.entry];
}

export interface StartOptions {
  /** KUBECONFIG: a file that authenticates as the controller (tools/harness/service-account-identity.ts). */
  kubeconfig: string;
  /** WATCH_NAMESPACES; omitted or empty: all. */
  namespaces?: string[];
  /** K_SINK. Default: the function's own URL (fan-out to itself); null: none. */
  sink?: string | null;
  logLevel?: string;
  /** Anything else of the function's configuration (TEMPLATE_PATH, CONTROLLER_NAME, POD_NAME, ...). */
  env?: Record<string, string>;
  /** Default: the shipped snapshot. */
  variant?: Variant;
  /** Node options before the entry (e.g. --cpu-prof), for profiling. */
  nodeArgs?: string[];
  /**
   * A memory cgroup's directory (cgroup v1) to start the process in, so that
   * its limit applies from the first page the process touches: the bench's
   * enforced Service limit (bench/lib/memory-cgroup.ts).
   */
  memoryCgroup?: string;
  /** How often /readyz is polled while starting, on fresh connections (default 2 ms: the bench's time to ready is this close). */
  readyPollMs?: number;
  readyTimeoutMs?: number;
}

export interface Memory {
  /** VmRSS: resident now. */
  rssKb: number;
  /** VmHWM: the peak resident size over the process's life. */
  hwmKb: number;
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

const live = new Set<ChildProcess>();
let exitHook = false;

function installExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  // A crashed test run or bench must not leave function processes behind.
  process.on('exit', () => {
    for (const p of live) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  });
}

export interface Posted {
  status: number;
  /** Posted → answered, the answer read whole. */
  ms: number;
}

export class FunctionProcess {
  readonly url: string;
  readonly port: number;
  readonly proc: ChildProcess;
  readonly variant: Variant;
  /** performance.now() just before spawn. */
  readonly spawnedAt: number;
  /** performance.now() when /readyz first answered 200. */
  readyAt = Number.NaN;
  /** Its stdout, one parsed JSON log line each (a line that is not JSON as `msg`). */
  logs: LogLine[] = [];
  private stderrTail = '';
  /** Complete stderr lines, for diagnostics written there (the memory probe). */
  readonly stderrLines: string[] = [];
  private readonly exited: Promise<void>;

  private constructor(proc: ChildProcess, port: number, variant: Variant, spawnedAt: number) {
    this.proc = proc;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
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
    proc.stderr!.on('data', (d: Buffer) => { this.stderrTail = (this.stderrTail + d.toString()).slice(-4000); });
    createInterface({ input: proc.stderr! }).on('line', (line) => { this.stderrLines.push(line); });
  }

  get pid(): number {
    return this.proc.pid ?? 0;
  }

  /** Spawn → /readyz 200, in ms. */
  get readyMs(): number {
    return this.readyAt - this.spawnedAt;
  }

  /** Spawns the function on a fresh port (never one a dead process had) and resolves once /readyz answers 200. */
  static async start(opts: StartOptions): Promise<FunctionProcess> {
    installExitHook();
    const variant = opts.variant ?? SHIPPED_VARIANT;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const sink = opts.sink === undefined ? `${url}/` : opts.sink;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      KUBECONFIG: opts.kubeconfig,
      PORT: String(port),
      TEMPLATE_PATH: 'infra/templates/lb-deployment.yaml',
      LOG_LEVEL: opts.logLevel ?? 'info',
      ...(opts.namespaces && opts.namespaces.length > 0 ? { WATCH_NAMESPACES: opts.namespaces.join(',') } : {}),
      ...(sink ? { K_SINK: sink } : {}),
      ...variant.env,
      ...opts.env,
    };
    const spawnedAt = performance.now();
    const argv = [...(opts.nodeArgs ?? []), ...variantArgs(variant)];
    // In a cgroup: a shell joins it, then becomes node (same pid), before node allocates anything.
    const proc = opts.memoryCgroup === undefined
      ? spawn(process.execPath, argv, { cwd: repoRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', opts.memoryCgroup, process.execPath, ...argv], { cwd: repoRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    const fn = new FunctionProcess(proc, port, variant, spawnedAt);
    const deadline = spawnedAt + (opts.readyTimeoutMs ?? 60000);
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`function (${variant.name}) exited ${proc.exitCode ?? proc.signalCode}: ${fn.stderrTail}`);
      if (await probeReady(url)) break;
      if (performance.now() > deadline) {
        await fn.stop();
        throw new Error(`function (${variant.name}) on ${url} not ready after ${opts.readyTimeoutMs ?? 60000} ms: ${fn.stderrTail}`);
      }
      await new Promise((r) => setTimeout(r, opts.readyPollMs ?? 2));
    }
    fn.readyAt = performance.now();
    return fn;
  }

  memory(): Memory {
    return readMemory(this.pid);
  }

  /** POSTs a CloudEvent in binary mode, as Knative delivers it (with `authorization`, as a sender with OIDC on); the status and the round trip. */
  async post(event: CloudEvent<unknown>, path = '/', opts: { authorization?: string } = {}): Promise<Posted> {
    const started = performance.now();
    const res = await sendEvent(`${this.url}${path}`, event, opts);
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  }

  /**
   * The "listening" log line (what the process took from its environment).
   * It is written before the first answer but read from another pipe, so it
   * may arrive after /readyz has answered: wait for it.
   */
  async listening(timeoutMs = 5000): Promise<LogLine> {
    return waitFor('the listening log line', () => this.logs.find((l) => l.msg === 'listening'), { timeoutMs, intervalMs: 5 });
  }

  /** The "event handled" log line of an event (its outcome, the Gateway count). */
  async handled(eventId: string, timeoutMs = 10000): Promise<LogLine> {
    return waitFor(`the log line of event ${eventId}`, () => this.logs.find((l) => l.eventId === eventId), { timeoutMs, intervalMs: 5 });
  }

  /**
   * Until the process has logged nothing for `forMs`: the events already on
   * their way to it (through a Broker or an adapter) have all been handled.
   */
  async quiet(forMs: number, timeoutMs = 60000): Promise<void> {
    let seen = -1;
    let since = Date.now();
    await waitFor(`the function to have handled nothing for ${forMs} ms`, () => {
      if (this.logs.length !== seen) {
        seen = this.logs.length;
        since = Date.now();
      }
      return Date.now() - since >= forMs ? true : undefined;
    }, { timeoutMs, intervalMs: Math.min(250, forMs) });
  }

  clearLogs(): void {
    this.logs = [];
  }

  /** How the process ended: undefined while it runs. */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    return this.proc.exitCode === null && this.proc.signalCode === null ? undefined : { code: this.proc.exitCode, signal: this.proc.signalCode };
  }

  /** SIGKILL, no cleanup: the crash case. */
  async kill9(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** SIGTERM (the function drains and exits), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 30000);
    await this.signal('SIGTERM');
    clearTimeout(timer);
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
    await this.exited;
  }
}

/** The shipped function as a process, ready to serve. */
export function startFunctionProcess(opts: StartOptions): Promise<FunctionProcess> {
  return FunctionProcess.start(opts);
}
