// Reaps a control plane whose owner died without cleaning up (SIGKILL, a
// crashed test runner, an OOM kill). It runs as its own detached process,
// polls the owner's pid, and when the owner is gone it stops every process
// whose command line names the control plane's state directory, then removes
// that directory. Matching on the state directory means a recycled pid can
// never make it kill an unrelated process.
//
// Usage: node watchdog.mts <owner-pid> <state-dir>
import { readdirSync, readFileSync, rmSync } from 'node:fs';

const ownerPid = Number(process.argv[2]);
const stateDir = process.argv[3] ?? '';
if (!Number.isInteger(ownerPid) || ownerPid <= 0 || stateDir.length < 8) {
  process.stderr.write('usage: watchdog <owner-pid> <state-dir>\n');
  process.exit(2);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes (other than this one) whose command line mentions the state directory. */
export function processesUsing(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmdline.includes(dir)) pids.push(pid);
    } catch {
      // The process exited while we looked.
    }
  }
  return pids;
}

async function reap(): Promise<void> {
  for (const pid of processesUsing(stateDir)) {
    try { process.kill(pid, 'SIGTERM'); } catch { /* already gone */ }
  }
  const deadline = Date.now() + 5000;
  while (processesUsing(stateDir).length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const pid of processesUsing(stateDir)) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
  }
  rmSync(stateDir, { recursive: true, force: true });
}

// A normal stop sends SIGTERM here after it has stopped the control plane itself.
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => undefined);

const timer = setInterval(() => {
  if (alive(ownerPid)) return;
  clearInterval(timer);
  void reap().then(() => process.exit(0));
}, 250);
