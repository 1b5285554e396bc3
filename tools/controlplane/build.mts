#!/usr/bin/env node
// Builds the pinned control-plane binaries (etcd, kube-apiserver,
// kube-controller-manager) from Go modules and collects the pinned upstream
// CRDs, caching both per version under the user's cache directory.
//
// Plain JavaScript on purpose: it runs before the TypeScript build, from
// `npm test`, `npm start` and `npm run bench`, on a machine that has nothing
// but Go and Node.
//
// Usage: node tools/controlplane/build.mjs [--print]   (--print: only print the
// resolved asset directory as JSON, building whatever is missing first)
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, copyFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// This file also runs from the compiled tree (dist/tools/controlplane), so the
// wrapper module is found by walking up to the repository root.
function findHere() {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'tools', 'controlplane', 'go.mod'))) return join(dir, 'tools', 'controlplane');
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find tools/controlplane/go.mod above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}
const here = findHere();
const log = (msg: string): boolean => process.stderr.write(`[controlplane] ${msg}\n`);

/** Versions are read from the wrapper go.mod so there is one place to pin them. */
export interface PinnedVersions {
  kubernetes: string;
  etcd: string;
  gatewayApi: string;
}

export interface ControlPlaneAssets {
  versions: PinnedVersions;
  binaries: Record<BinaryName, string>;
  gatewayApiCrds: string;
}

type BinaryName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

export function pinnedVersions(): PinnedVersions {
  const gomod = readFileSync(join(here, 'go.mod'), 'utf8');
  const pick = (mod: string): string => {
    const m = gomod.match(new RegExp(`^\\s*${mod.replace(/[./]/g, '\\$&')}\\s+(v\\S+)`, 'm'));
    if (!m) throw new Error(`tools/controlplane/go.mod does not require ${mod}`);
    return m[1] as string;
  };
  const pins = JSON.parse(readFileSync(join(here, 'pins.json'), 'utf8')) as { gatewayApi: string };
  return { kubernetes: pick('k8s.io/kubernetes'), etcd: pick('go.etcd.io/etcd/server/v3'), ...pins };
}

export function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'meridio-2-knative');
}

const BINARIES: ReadonlyArray<{ name: BinaryName; pkg: string; env: string }> = [
  { name: 'etcd', pkg: 'go.etcd.io/etcd/server/v3', env: 'TEST_ASSET_ETCD' },
  { name: 'kube-apiserver', pkg: 'k8s.io/kubernetes/cmd/kube-apiserver', env: 'TEST_ASSET_KUBE_APISERVER' },
  { name: 'kube-controller-manager', pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager', env: 'TEST_ASSET_KUBE_CONTROLLER_MANAGER' },
];

function binDir(v: PinnedVersions): string {
  return join(cacheRoot(), 'bin', `k8s-${v.kubernetes}_etcd-${v.etcd}`);
}

/** Where each binary comes from, following envtest's lookup order. */
export function resolveBinaries(v: PinnedVersions = pinnedVersions()): Record<BinaryName, string> {
  const out = {} as Record<BinaryName, string>;
  for (const b of BINARIES) {
    const explicit = process.env[b.env];
    if (explicit) out[b.name] = explicit;
    else if (process.env.KUBEBUILDER_ASSETS) out[b.name] = join(process.env.KUBEBUILDER_ASSETS, b.name);
    else out[b.name] = join(binDir(v), b.name);
  }
  return out;
}

// An interrupted build must not leave a `go build` running on its own.
const liveChildren = new Set<ChildProcess>();
export function stopBuilds(): void {
  for (const c of liveChildren) c.kill('SIGTERM');
}

function run(cmd: string, args: string[], opts: { cwd: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    liveChildren.add(child);
    child.on('exit', () => liveChildren.delete(child));
    let tail = '';
    let packages = 0;
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString();
      tail = (tail + text).slice(-8000);
      // `go build -v` prints one package per line: a cheap progress counter.
      packages += text.split('\n').filter((l) => l.trim() && !l.startsWith('go: ')).length;
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const started = Date.now();
    const beat = setInterval(() => {
      log(`  still building: ${Math.round((Date.now() - started) / 1000)}s, ${packages} packages compiled`);
    }, 20000);
    child.on('error', (err) => { clearInterval(beat); reject(err); });
    child.on('close', (code) => {
      clearInterval(beat);
      if (code === 0) resolve(tail);
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}\n${tail}`));
    });
  });
}

async function buildBinaries(v: PinnedVersions): Promise<void> {
  const dir = binDir(v);
  const missing = BINARIES.filter((b) => !existsSync(join(dir, b.name)));
  if (missing.length === 0) return;
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error('Go is required to build the control plane (go not found on PATH); or set KUBEBUILDER_ASSETS to a directory holding etcd, kube-apiserver and kube-controller-manager');
  }
  mkdirSync(dir, { recursive: true });
  const minor = v.kubernetes.split('.')[1];
  const ldflags = [
    `-X k8s.io/component-base/version.gitVersion=${v.kubernetes}`,
    `-X k8s.io/component-base/version.gitMajor=1`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    `-X k8s.io/component-base/version.gitTreeState=clean`,
    `-X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z`,
    '-s', '-w',
  ].join(' ');
  log(`building ${missing.map((b) => b.name).join(', ')} (kubernetes ${v.kubernetes}, etcd ${v.etcd}) into ${dir}`);
  log('a cold build downloads modules and compiles a few thousand packages: expect 10-25 minutes on 2 cores');
  for (const b of missing) {
    const started = Date.now();
    const tmp = join(dir, `.${b.name}.tmp-${process.pid}`);
    log(`go build ${b.pkg}`);
    await run('go', ['build', '-v', '-ldflags', ldflags, '-o', tmp, b.pkg], { cwd: here });
    // Rename makes the cache entry appear atomically: an interrupted build
    // never leaves a half-written binary that a later run would trust.
    renameSync(tmp, join(dir, b.name));
    log(`built ${b.name} in ${Math.round((Date.now() - started) / 1000)}s`);
  }
}

/** Go module directory of a pinned module, downloading it through the module proxy. */
function moduleDir(path: string, version: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', `${path}@${version}`], {
    cwd: here,
    encoding: 'utf8',
  });
  const info = JSON.parse(out) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${path}@${version}: ${info.Error ?? 'no directory'}`);
  return info.Dir;
}

function crdDir(v: PinnedVersions): string {
  return join(cacheRoot(), 'crds', `gateway-api-${v.gatewayApi}`);
}

function collectGatewayApiCrds(v: PinnedVersions): string {
  const dir = crdDir(v);
  if (existsSync(join(dir, '.complete'))) return dir;
  log(`collecting Gateway API ${v.gatewayApi} standard-channel CRDs`);
  const src = join(moduleDir('sigs.k8s.io/gateway-api', v.gatewayApi), 'config', 'crd', 'standard');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(src)) {
    // The standard directory also ships a ValidatingAdmissionPolicy
    // (safe-upgrades); only CustomResourceDefinitions belong here.
    if (!f.endsWith('.yaml') || f.includes('_vap_')) continue;
    copyFileSync(join(src, f), join(dir, f));
  }
  writeFileSync(join(dir, '.complete'), v.gatewayApi);
  return dir;
}

/** A crude cross-process lock so two concurrent runs never build the same binary twice. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = join(cacheRoot(), '.build.lock');
  mkdirSync(cacheRoot(), { recursive: true });
  const deadline = Date.now() + 60 * 60 * 1000;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      let holder = 0;
      try { holder = Number(readFileSync(join(lock, 'pid'), 'utf8')); } catch { /* being created */ }
      const alive = holder > 0 && (() => { try { process.kill(holder, 0); return true; } catch { return false; } })();
      if (holder > 0 && !alive) { rmSync(lock, { recursive: true, force: true }); continue; }
      if (Date.now() > deadline) throw new Error(`timed out waiting for build lock ${lock}`);
      log(`waiting for another build (pid ${holder || '?'}) to finish`);
      await new Promise((r) => setTimeout(r, 5000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export async function ensureAssets(): Promise<ControlPlaneAssets> {
  const v = pinnedVersions();
  const started = Date.now();
  const bins = resolveBinaries(v);
  const overridden = BINARIES.some((b) => process.env[b.env]) || Boolean(process.env.KUBEBUILDER_ASSETS);
  return withLock(async () => {
    if (overridden) {
      for (const [name, path] of Object.entries(bins)) {
        if (!existsSync(path)) throw new Error(`${name} not found at ${path} (from KUBEBUILDER_ASSETS / TEST_ASSET_*)`);
      }
    } else {
      await buildBinaries(v);
    }
    const gatewayApiCrds = collectGatewayApiCrds(v);
    const assets: ControlPlaneAssets = { versions: v, binaries: bins, gatewayApiCrds };
    const secs = (Date.now() - started) / 1000;
    if (secs > 2) log(`assets ready in ${secs.toFixed(0)}s`);
    return assets;
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      stopBuilds();
      process.exit(130);
    });
  }
  ensureAssets().then(
    (assets: ControlPlaneAssets) => {
      if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(assets)}\n`);
      else log(`binaries: ${Object.values(assets.binaries).join(', ')}`);
    },
    (err: unknown) => {
      log(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
