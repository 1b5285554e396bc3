// A container registry on loopback, for the release test: Debian's
// docker-registry (the CNCF distribution registry, 2.8 in bookworm). Only its
// binary is used: the package is downloaded and unpacked into the project's
// cache (never installed, so that no system service is set up or started),
// and each test starts its own registry on a free port with its storage in a
// temporary directory.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheRoot, withLock, type Log } from '../go-build.mts';
import { freePort } from '../controlplane/free-port.ts';
import { waitFor } from '../controlplane/wait-for.ts';

const PACKAGE = 'docker-registry';

function registryDir(): string {
  return join(cacheRoot(), 'docker-registry');
}

/** The registry binary, unpacked from Debian's package on first use. */
export async function ensureRegistryBinary(log: Log): Promise<string> {
  const binary = join(registryDir(), 'root', 'usr', 'bin', 'docker-registry');
  if (existsSync(binary)) return binary;
  await withLock('.docker-registry.lock', log, async () => {
    if (existsSync(binary)) return;
    const work = mkdtempSync(join(tmpdir(), 'meridio2-registry-deb-'));
    try {
      const download = (): void => { execFileSync('apt-get', ['download', PACKAGE], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] }); };
      log(`apt-get download ${PACKAGE}`);
      try {
        download();
      } catch {
        // A fresh machine has no package lists yet.
        execFileSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update'], { stdio: ['ignore', 'ignore', 'inherit'] });
        download();
      }
      const deb = readdirSync(work).find((f) => f.startsWith(`${PACKAGE}_`) && f.endsWith('.deb'));
      if (!deb) throw new Error(`apt-get download ${PACKAGE} wrote no .deb`);
      const root = join(registryDir(), `root.tmp-${process.pid}`);
      rmSync(root, { recursive: true, force: true });
      mkdirSync(root, { recursive: true });
      execFileSync('dpkg-deb', ['-x', join(work, deb), root]);
      rmSync(join(registryDir(), 'root'), { recursive: true, force: true });
      execFileSync('mv', [root, join(registryDir(), 'root')]);
      log(`unpacked ${deb}`);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
  return binary;
}

export interface LocalRegistry {
  /** host:port, as an image reference's registry part. */
  host: string;
  stop(): Promise<void>;
}

/** Starts a registry on 127.0.0.1 with its own storage; resolves once /v2/ answers. */
export async function startRegistry(log: Log): Promise<LocalRegistry> {
  const binary = await ensureRegistryBinary(log);
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-registry-'));
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(config, [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '',
  ].join('\n'));
  const proc: ChildProcess = spawn(binary, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-8000); });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const host = `127.0.0.1:${port}`;
  try {
    await waitFor(`the registry on ${host}`, async () => {
      if (proc.exitCode !== null) throw new Error(`docker-registry exited ${proc.exitCode}: ${stderr}`);
      const res = await fetch(`http://${host}/v2/`).catch(() => undefined);
      return res?.status === 200 ? true : undefined;
    }, { timeoutMs: 30000, intervalMs: 50 });
  } catch (err) {
    await stop();
    throw err;
  }
  return { host, stop };
}
