import { spawn, type ChildProcess } from 'node:child_process';

// A long-running Go binary of the test data plane (Knative Eventing), with
// its output kept for assertions and for the error message when it dies.

export interface GoProcess {
  name: string;
  proc: ChildProcess;
  /** Everything it wrote so far (stdout and stderr, interleaved, capped). */
  output(): string;
  /** Whether it is still running. */
  alive(): boolean;
  /** SIGTERM, then SIGKILL if it is still there after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_CAP = 4 * 1024 * 1024;

/** `stdin`: keep a pipe to the process's stdin (closed otherwise); `cwd`: its working directory. */
export function startGoProcess(name: string, bin: string, args: string[], env: Record<string, string>, opts: { stdin?: boolean; cwd?: string } = {}): GoProcess {
  const proc = spawn(bin, args, { env: { PATH: process.env.PATH ?? '', ...env }, cwd: opts.cwd, stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  let out = '';
  const append = (d: Buffer): void => {
    out += d.toString();
    // Keep the tail: the latest lines are the ones a failing test needs.
    if (out.length > OUTPUT_CAP) out = out.slice(-OUTPUT_CAP / 2);
  };
  proc.stdout!.on('data', append);
  proc.stderr!.on('data', append);
  // A failed exec (missing binary) must not crash the test runner.
  proc.on('error', (err) => append(Buffer.from(`spawn ${bin}: ${err.message}\n`)));
  const exited = new Promise<void>((r) => proc.once('close', () => r()));
  const alive = (): boolean => proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined;
  return {
    name,
    proc,
    output: () => out,
    alive,
    stop: async (graceMs = 10000) => {
      if (!alive()) return exited;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (alive()) proc.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The last `n` lines of a process's output, for error messages. */
export function tail(p: GoProcess, n = 20): string {
  return p.output().split('\n').slice(-n).join('\n');
}
