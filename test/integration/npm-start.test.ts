import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { processesNaming } from '../../tools/controlplane/control-plane.js';

// `npm start` from a fresh clone with no cluster configured: it must start the
// embedded control plane, apply infra/samples and reach a table in which the
// sample Gateway is Programmed, then stop on SIGTERM with exit code 0 and
// leave no process behind. It runs the compiled entry exactly as npm does
// (the test command compiles dist/ before jest starts).

const DEADLINE_MS = 120000;
const SAMPLE_GATEWAY = 'meridio-demo/sllb-a';

/** The environment of a user with no cluster: no $KUBECONFIG, an empty home, not in a pod. */
function noClusterEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    // Evaluated here, with the real home: the control-plane binaries built
    // once are found in the cache instead of being built again.
    XDG_CACHE_HOME: process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
    PORT: '0',
  };
  delete env.KUBECONFIG;
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.LOG_LEVEL;
  return env;
}

function exited(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
}

describe('npm start without a cluster', () => {
  it('reaches a table where the sample Gateway is Programmed, and stops cleanly on SIGTERM', async () => {
    const home = mkdtempSync(join(tmpdir(), 'meridio2-home-'));
    const child = spawn(process.execPath, ['dist/tools/dev/start.js'], { env: noClusterEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stateDir: string | undefined;
    createInterface({ input: child.stderr! }).on('line', (line) => {
      stderr += `${line}\n`;
      stateDir ??= /embedded control plane state: (\S+)/.exec(line)?.[1];
    });
    const context = (): string => `\n--- stderr of npm start (last lines)\n${stderr.split('\n').slice(-40).join('\n')}`;

    try {
      // Streamed, not polled: settles on the first table row showing the
      // sample Gateway Programmed, on an early exit, or at the deadline.
      const row = await new Promise<string>((resolve, reject) => {
        let programmedColumn = -1;
        const timer = setTimeout(() => reject(new Error(`no table row with ${SAMPLE_GATEWAY} Programmed=True within ${DEADLINE_MS} ms${context()}`)), DEADLINE_MS);
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`npm start exited early (code ${code}, signal ${signal})${context()}`));
        });
        createInterface({ input: child.stdout! }).on('line', (line) => {
          const cells = line.trim().split(/\s+/);
          if (cells[0] === 'NAMESPACE') programmedColumn = cells.indexOf('PROGRAMMED');
          else if (`${cells[0]}/${cells[1]}` === SAMPLE_GATEWAY && programmedColumn > 0 && cells[programmedColumn] === 'True') {
            clearTimeout(timer);
            resolve(line);
          }
        });
      });
      expect(row).toMatch(/^meridio-demo\s+sllb-a\s+True\s+True\s/);
      expect(stateDir).toBeDefined();

      child.kill('SIGTERM');
      const code = await exited(child);
      // The log is part of the received value only when the exit is wrong, so a failure shows why.
      expect(`exit ${code}${code === 0 ? '' : context()}`).toBe('exit 0');
      const dir = stateDir ?? '';
      expect(processesNaming(dir)).toEqual([]);
      expect(existsSync(dir)).toBe(false);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited(child);
      }
      rmSync(home, { recursive: true, force: true });
    }
  }, DEADLINE_MS + 60000);
});

describe('npm start where the port is taken', () => {
  it('says in one line which port and what to set, before setting anything up, and exits 1', async () => {
    const home = mkdtempSync(join(tmpdir(), 'meridio2-home-'));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, () => resolve()));
    const port = (taken.address() as AddressInfo).port;
    try {
      // A cluster is configured (its kubeconfig is never read: the port is settled first).
      const env = { ...noClusterEnv(home), KUBECONFIG: join(home, 'kubeconfig'), PORT: String(port) };
      const child = spawn(process.execPath, ['dist/tools/dev/start.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      expect(await exited(child)).toBe(1);
      expect(stderr).toContain(`[dev] startup failed: PORT ${port}: is in use: set PORT to a free port (PORT=0 picks any free one)`);
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(stderr).not.toContain('cluster mode');
    } finally {
      taken.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('npm start against an API server that does not answer', () => {
  it('says in one line which API server and why, before starting anything, and exits 1', async () => {
    const home = mkdtempSync(join(tmpdir(), 'meridio2-home-'));
    // A port nothing listens on: taken, then released.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const kubeconfig = join(home, 'kubeconfig');
    writeFileSync(kubeconfig, [
      'apiVersion: v1', 'kind: Config', 'current-context: gone',
      'clusters: [{name: gone, cluster: {server: "https://127.0.0.1:' + String(port) + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: someone, user: {token: unused}}]',
      'contexts: [{name: gone, context: {cluster: gone, user: someone}}]', '',
    ].join('\n'));
    try {
      const child = spawn(process.execPath, ['dist/tools/dev/start.js'], { env: { ...noClusterEnv(home), KUBECONFIG: kubeconfig }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      expect(await exited(child)).toBe(1);
      expect(stderr).toContain(`[dev] startup failed: API server https://127.0.0.1:${port} (context gone): unreachable: `);
      expect(stderr).toMatch(/ECONNREFUSED|connect/);
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(stderr).not.toContain('cluster mode');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
