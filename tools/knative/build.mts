#!/usr/bin/env node
// Builds the pinned Knative Eventing ApiServerSource receive adapter from Go
// modules and collects the pinned Knative Serving and Eventing CRDs, caching
// both per version under the user's cache directory.
//
// Runs directly under Node's type stripping (erasable syntax only), on a
// machine that has nothing but Go and Node.
//
// Usage: node tools/knative/build.mts [--print]   (--print: print the resolved
// assets as JSON on stdout, building whatever is missing first)
//
// KNATIVE_ASSETS=<dir> skips the build and uses <dir>/apiserver_receive_adapter.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// This file may also run from a compiled tree (dist/tools/knative), so the
// wrapper module is found by walking up to the repository root.
function findHere(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'tools', 'knative', 'go.mod'))) return join(dir, 'tools', 'knative');
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find tools/knative/go.mod above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}
const here = findHere();
const log = (msg: string): boolean => process.stderr.write(`[knative] ${msg}\n`);

const ADAPTER = 'apiserver_receive_adapter';
const ADAPTER_PKG = 'knative.dev/eventing/cmd/apiserver_receive_adapter';

/** Eventing is read from the wrapper go.mod, Serving (CRDs only) from pins.json. */
export interface KnativeVersions {
  eventing: string;
  serving: string;
}

export interface KnativeAssets {
  versions: KnativeVersions;
  /** The ApiServerSource receive adapter binary. */
  adapter: string;
  /** Directory of Knative Serving CustomResourceDefinition YAML files. */
  servingCrds: string;
  /** Directory of Knative Eventing CustomResourceDefinition YAML files. */
  eventingCrds: string;
}

export function pinnedVersions(): KnativeVersions {
  const gomod = readFileSync(join(here, 'go.mod'), 'utf8');
  const m = gomod.match(/^\s*knative\.dev\/eventing\s+(v\S+)/m);
  if (!m) throw new Error('tools/knative/go.mod does not require knative.dev/eventing');
  const pins = JSON.parse(readFileSync(join(here, 'pins.json'), 'utf8')) as { serving: string };
  return { eventing: m[1] as string, serving: pins.serving };
}

export function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'meridio-2-knative');
}

function binDir(v: KnativeVersions): string {
  return join(cacheRoot(), 'bin', `knative-eventing-${v.eventing}`);
}

/** Where the adapter comes from: `$KNATIVE_ASSETS/apiserver_receive_adapter`, else the cache. */
export function resolveAdapter(v: KnativeVersions = pinnedVersions()): string {
  if (process.env.KNATIVE_ASSETS) return join(process.env.KNATIVE_ASSETS, ADAPTER);
  return join(binDir(v), ADAPTER);
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

function requireGo(): void {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error(`Go is required to build the Knative adapter (go not found on PATH); or set KNATIVE_ASSETS to a directory holding ${ADAPTER}`);
  }
}

async function buildAdapter(v: KnativeVersions): Promise<string> {
  const dir = binDir(v);
  const out = join(dir, ADAPTER);
  if (existsSync(out)) return out;
  requireGo();
  mkdirSync(dir, { recursive: true });
  log(`building ${ADAPTER} (knative.dev/eventing ${v.eventing}) into ${dir}`);
  log('a cold build downloads modules and compiles about a thousand packages: expect 4-8 minutes on 2 cores');
  const started = Date.now();
  const tmp = join(dir, `.${ADAPTER}.tmp-${process.pid}`);
  try {
    await run('go', ['build', '-v', '-trimpath', '-ldflags', '-s -w', '-o', tmp, ADAPTER_PKG], { cwd: here });
    // Rename makes the cache entry appear atomically: an interrupted build
    // never leaves a half-written binary that a later run would trust.
    renameSync(tmp, out);
  } finally {
    rmSync(tmp, { force: true });
  }
  log(`built ${ADAPTER} in ${Math.round((Date.now() - started) / 1000)}s`);
  return out;
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

/**
 * Copies the CustomResourceDefinition files of `<module>/<sub>` into
 * `<cache>/crds/<name>`; a `.complete` marker records a finished copy.
 */
function collectCrds(name: string, module: string, version: string, sub: string): string {
  const dir = join(cacheRoot(), 'crds', name);
  if (existsSync(join(dir, '.complete'))) return dir;
  requireGo();
  log(`collecting ${module} ${version} CRDs from ${sub}`);
  const src = join(moduleDir(module, version), sub);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  let count = 0;
  for (const f of readdirSync(src).sort()) {
    if (!f.endsWith('.yaml')) continue;
    // Only CustomResourceDefinitions belong here, nothing else that may
    // share the directory in a later release.
    if (!/^kind:\s*CustomResourceDefinition\s*$/m.test(readFileSync(join(src, f), 'utf8'))) continue;
    copyFileSync(join(src, f), join(tmp, f));
    // The module cache is read-only; the copies need not be.
    chmodSync(join(tmp, f), 0o644);
    count++;
  }
  if (count === 0) throw new Error(`no CustomResourceDefinition files in ${src}`);
  writeFileSync(join(tmp, '.complete'), `${module}@${version}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  renameSync(tmp, dir);
  log(`collected ${count} CRD files into ${dir}`);
  return dir;
}

/**
 * A crude cross-process lock so two concurrent runs never build the same
 * binary twice. Separate from the control-plane lock, so that a caller
 * holding that one can still call ensureKnativeAssets().
 */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = join(cacheRoot(), '.knative-build.lock');
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

export async function ensureKnativeAssets(): Promise<KnativeAssets> {
  const v = pinnedVersions();
  const started = Date.now();
  return withLock(async () => {
    let adapter: string;
    if (process.env.KNATIVE_ASSETS) {
      adapter = resolveAdapter(v);
      if (!existsSync(adapter)) throw new Error(`${ADAPTER} not found at ${adapter} (from KNATIVE_ASSETS)`);
    } else {
      adapter = await buildAdapter(v);
    }
    const servingCrds = collectCrds(`knative-serving-${v.serving}`, 'knative.dev/serving', v.serving, join('config', 'core', '300-resources'));
    const eventingCrds = collectCrds(`knative-eventing-${v.eventing}`, 'knative.dev/eventing', v.eventing, join('config', 'core', 'resources'));
    const secs = (Date.now() - started) / 1000;
    if (secs > 2) log(`assets ready in ${secs.toFixed(0)}s`);
    return { versions: v, adapter, servingCrds, eventingCrds };
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      stopBuilds();
      process.exit(130);
    });
  }
  ensureKnativeAssets().then(
    (assets: KnativeAssets) => {
      if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(assets)}\n`);
      else log(`adapter: ${assets.adapter}; CRDs: ${assets.servingCrds}, ${assets.eventingCrds}`);
    },
    (err: unknown) => {
      log(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
