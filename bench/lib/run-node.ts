import { spawn } from 'node:child_process';
import { repoRoot } from '../../tools/harness/repo-root.js';

// A bare `node` of the same binary, from the repository root, with nothing
// of this process's environment but PATH: the floors of P1 and the
// dependency costs of --explore.

export function cleanEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '' };
}

/** Runs `node <args>` to completion (`env` added to the clean one); its stdout, or an error with its stderr. */
export function runNode(args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { cwd: repoRoot(), env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    p.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`node ${args.join(' ')} exited ${code}: ${err}`))));
  });
}
