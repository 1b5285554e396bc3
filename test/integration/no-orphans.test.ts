import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { processesNaming } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';

// A control plane must never outlive whoever started it: not after a clean
// SIGTERM, and not after a SIGKILL that gives it no chance to clean up (the
// watchdog reaps it then). Each case starts its own small control plane from
// the compiled CLI, exactly as a developer would.

/** Running means present and not a zombie (an exited child nobody has reaped yet). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

async function startChild(): Promise<{ child: ReturnType<typeof spawn>; stateDir: string; pids: number[] }> {
  const child = spawn(process.execPath, ['dist/tools/controlplane/cli.js', '--no-controller-manager'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`control-plane CLI exited early with ${code}`)));
  });
  const info = JSON.parse(first) as { stateDir: string; pids: number[] };
  return { child, stateDir: info.stateDir, pids: info.pids };
}

describe('no process is left behind', () => {
  it.each([['SIGTERM'], ['SIGKILL']] as const)('after the owner gets %s', async (signal) => {
    const { child, stateDir, pids } = await startChild();
    expect(pids.length).toBe(2); // etcd and kube-apiserver
    expect(processesNaming(stateDir).length).toBeGreaterThanOrEqual(3); // plus the watchdog
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await exited;
    await waitFor(`every process of ${stateDir} to exit`, () => (processesNaming(stateDir).length === 0 ? true : undefined), { timeoutMs: 30000 });
    await waitFor(`${stateDir} to be removed`, () => (existsSync(stateDir) ? undefined : true), { timeoutMs: 10000 });
    // A process that is exiting has already lost its command line: wait
    // for each original pid to be gone (or a zombie) too.
    await waitFor('the original pids to exit', () => (pids.filter(isRunning).length === 0 ? true : undefined), { timeoutMs: 30000 });
    expect(pids.filter(isRunning)).toEqual([]);
  });
});
