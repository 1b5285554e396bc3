#!/usr/bin/env node
// Builds the pinned kustomize from its Go module and caches the binary per
// version under the user's cache directory. The test suite renders infra/ with
// this binary, so the install that is validated is exactly what
// `kustomize build infra` (or `kubectl apply -k infra`) produces.
//
// Runs directly under Node's type stripping (erasable syntax only), on a
// machine that has nothing but Go and Node.
//
// Usage: node tools/kustomize/build.mts [--print]   (--print: print the
// resolved binary as JSON on stdout, building it first when missing)
//
// KUSTOMIZE_BIN=<file> skips the build and uses that binary.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// This file may also run from a compiled tree (dist/tools/kustomize), so the
// wrapper module is found by walking up to the repository root.
function findHere(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'tools', 'kustomize', 'go.mod'))) return join(dir, 'tools', 'kustomize');
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find tools/kustomize/go.mod above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}
const here = findHere();
const log = (msg: string): boolean => process.stderr.write(`[kustomize] ${msg}\n`);

const MODULE = 'sigs.k8s.io/kustomize/kustomize/v5';

export interface KustomizeAssets {
  version: string;
  /** The kustomize binary. */
  binary: string;
}

/** The version is read from the wrapper go.mod, the one place it is pinned. */
export function pinnedVersion(): string {
  const gomod = readFileSync(join(here, 'go.mod'), 'utf8');
  const m = gomod.match(/^\s*sigs\.k8s\.io\/kustomize\/kustomize\/v5\s+(v\S+)/m);
  if (!m) throw new Error(`tools/kustomize/go.mod does not require ${MODULE}`);
  return m[1] as string;
}

export function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'meridio-2-knative');
}

function binDir(version: string): string {
  return join(cacheRoot(), 'bin', `kustomize-${version}`);
}

/** Where the binary comes from: `$KUSTOMIZE_BIN`, else the cache. */
export function resolveKustomize(version: string = pinnedVersion()): string {
  if (process.env.KUSTOMIZE_BIN) return process.env.KUSTOMIZE_BIN;
  return join(binDir(version), 'kustomize');
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

async function build(version: string): Promise<string> {
  const dir = binDir(version);
  const out = join(dir, 'kustomize');
  if (existsSync(out)) return out;
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error('Go is required to build kustomize (go not found on PATH); or set KUSTOMIZE_BIN to a kustomize binary');
  }
  mkdirSync(dir, { recursive: true });
  log(`building kustomize (${MODULE} ${version}) into ${dir}`);
  log('a cold build downloads modules and compiles about 200 packages: expect 30 s to 2 minutes');
  const started = Date.now();
  const tmp = join(dir, `.kustomize.tmp-${process.pid}`);
  try {
    await run('go', ['build', '-v', '-trimpath', '-ldflags', `-s -w -X sigs.k8s.io/kustomize/api/provenance.version=${version}`, '-o', tmp, MODULE], { cwd: here });
    // Rename makes the cache entry appear atomically: an interrupted build
    // never leaves a half-written binary that a later run would trust.
    renameSync(tmp, out);
  } finally {
    rmSync(tmp, { force: true });
  }
  log(`built kustomize in ${Math.round((Date.now() - started) / 1000)}s`);
  return out;
}

/** A crude cross-process lock so that concurrent runs never build the same binary twice. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = join(cacheRoot(), '.kustomize-build.lock');
  mkdirSync(cacheRoot(), { recursive: true });
  const deadline = Date.now() + 30 * 60 * 1000;
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
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export async function ensureKustomize(): Promise<KustomizeAssets> {
  const version = pinnedVersion();
  if (process.env.KUSTOMIZE_BIN) {
    const binary = resolveKustomize(version);
    if (!existsSync(binary)) throw new Error(`kustomize not found at ${binary} (from KUSTOMIZE_BIN)`);
    return { version, binary };
  }
  const cached = resolveKustomize(version);
  if (existsSync(cached)) return { version, binary: cached };
  return withLock(async () => ({ version, binary: await build(version) }));
}

/** Runs `kustomize build <dir>` with the pinned binary and returns the YAML stream. */
export async function kustomizeBuild(dir: string): Promise<string> {
  const { binary } = await ensureKustomize();
  return execFileSync(binary, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      stopBuilds();
      process.exit(130);
    });
  }
  ensureKustomize().then(
    (assets: KustomizeAssets) => {
      if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(assets)}\n`);
      else log(`kustomize ${assets.version}: ${assets.binary}`);
    },
    (err: unknown) => {
      log(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
