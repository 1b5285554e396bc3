// What the builders of pinned Go binaries share (tools/controlplane,
// tools/kwok, tools/knative, tools/kustomize, tools/conformance,
// tools/prometheus, tools/jaeger; tools/prometheus-operator for its CRDs only): the per-user
// cache, a cross-process lock, `go build` with visible progress, and module
// downloads (and files collected from them) through the module proxy.
//
// Runs directly under Node's type stripping (erasable syntax only) before any
// TypeScript build, and from the compiled tree (dist/tools) afterwards; the
// builders import it as `../go-build.mts`, which tsc rewrites to `.mjs`.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'meridio-2-knative');
}

/**
 * The wrapper-module directory `tools/<name>`, found by walking up from the
 * caller, which may run from the source tree or from dist/.
 */
export function toolDir(name: string, from: string): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    if (existsSync(join(dir, 'tools', name, 'go.mod'))) return join(dir, 'tools', name);
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find tools/${name}/go.mod above ${fileURLToPath(from)}`);
    dir = parent;
  }
}

/** The version a wrapper go.mod requires of `module`: the one place it is pinned. */
export function requiredVersion(dir: string, module: string): string {
  const gomod = readFileSync(join(dir, 'go.mod'), 'utf8');
  const m = gomod.match(new RegExp(`^\\s*${module.replace(/[./]/g, '\\$&')}\\s+(v\\S+)`, 'm'));
  if (!m) throw new Error(`${join(dir, 'go.mod')} does not require ${module}`);
  return m[1] as string;
}

export type Log = (msg: string) => void;

export function logger(prefix: string): Log {
  return (msg) => {
    process.stderr.write(`[${prefix}] ${msg}\n`);
  };
}

// An interrupted build must not leave a `go build` running on its own.
const liveChildren = new Set<ChildProcess>();
export function stopBuilds(): void {
  for (const c of liveChildren) c.kill('SIGTERM');
}

function run(cmd: string, args: string[], cwd: string, log: Log): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd });
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
    child.on('error', (err) => {
      clearInterval(beat);
      reject(err);
    });
    child.on('close', (code) => {
      clearInterval(beat);
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}\n${tail}`));
    });
  });
}

export function requireGo(hint: string): void {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error(`Go is required to build ${hint} (go not found on PATH)`);
  }
}

/**
 * `go build -v` of one main package of the wrapper module in `dir` into
 * `out`. Built to a temporary name and renamed: an interrupted build never
 * leaves a half-written binary that a later run would trust.
 */
export async function goBuild(opts: { dir: string; pkg: string; out: string; ldflags?: string; trimpath?: boolean; tags?: string[]; log: Log }): Promise<void> {
  const started = Date.now();
  mkdirSync(dirname(opts.out), { recursive: true });
  const tmp = `${opts.out}.tmp-${process.pid}`;
  opts.log(`go build ${opts.pkg}`);
  const args = ['build', '-v', ...(opts.trimpath ? ['-trimpath'] : []), ...(opts.tags?.length ? ['-tags', opts.tags.join(',')] : []), ...(opts.ldflags ? ['-ldflags', opts.ldflags] : []), '-o', tmp, opts.pkg];
  try {
    await run('go', args, opts.dir, opts.log);
    renameSync(tmp, opts.out);
  } finally {
    rmSync(tmp, { force: true });
  }
  opts.log(`built ${opts.out.split('/').pop()} in ${Math.round((Date.now() - started) / 1000)}s`);
}

/**
 * One `go build -v` of several main packages of the wrapper module in `dir`,
 * so that they share one compilation of their common dependencies. Each
 * package's binary is named after the last element of its import path, as
 * `go build -o <dir>/` names it. All are built into a temporary directory and
 * renamed into `outDir` only when the whole build succeeded.
 */
export async function goBuildMany(opts: { dir: string; pkgs: string[]; outDir: string; ldflags?: string; trimpath?: boolean; log: Log }): Promise<void> {
  const started = Date.now();
  mkdirSync(opts.outDir, { recursive: true });
  const tmp = join(opts.outDir, `.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  opts.log(`go build ${opts.pkgs.join(' ')}`);
  const args = ['build', '-v', ...(opts.trimpath ? ['-trimpath'] : []), ...(opts.ldflags ? ['-ldflags', opts.ldflags] : []), '-o', `${tmp}/`, ...opts.pkgs];
  try {
    await run('go', args, opts.dir, opts.log);
    for (const pkg of opts.pkgs) {
      const name = pkg.split('/').pop() as string;
      renameSync(join(tmp, name), join(opts.outDir, name));
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  opts.log(`built ${opts.pkgs.length} binaries in ${Math.round((Date.now() - started) / 1000)}s`);
}

/**
 * `go test -c` of one test package of the wrapper module in `dir` into
 * `out`: a test binary, for suites shipped as Go tests (the Gateway API
 * conformance suite). Same temporary-name discipline as goBuild.
 */
export async function goTestCompile(opts: { dir: string; pkg: string; out: string; log: Log }): Promise<void> {
  const started = Date.now();
  mkdirSync(dirname(opts.out), { recursive: true });
  const tmp = `${opts.out}.tmp-${process.pid}`;
  opts.log(`go test -c ${opts.pkg}`);
  try {
    await run('go', ['test', '-c', '-trimpath', '-ldflags', '-s -w', '-o', tmp, opts.pkg], opts.dir, opts.log);
    renameSync(tmp, opts.out);
  } finally {
    rmSync(tmp, { force: true });
  }
  opts.log(`built ${opts.out.split('/').pop()} in ${Math.round((Date.now() - started) / 1000)}s`);
}

/** Go module directory of a pinned module, downloading it through the module proxy. */
export function moduleDir(path: string, version: string, cwd: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', `${path}@${version}`], { cwd, encoding: 'utf8' });
  const info = JSON.parse(out) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${path}@${version}: ${info.Error ?? 'no directory'}`);
  return info.Dir;
}

/**
 * Copies the CustomResourceDefinition files of `<module>/<sub>` into
 * `<cache>/crds/<name>` and returns that directory.
 */
export function collectCrds(opts: { name: string; module: string; version: string; sub: string; cwd: string; log: Log }): string {
  // apiextensions.k8s.io/v1beta1 copies (Multus ships one) are not served since Kubernetes 1.22.
  return collectManifests({ ...opts, subs: [opts.sub], kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.k8s.io/v1', into: 'crds' });
}

/**
 * Copies the files of `<module>/<sub>` (for each sub) that hold an object of
 * `kind` and `apiVersion` into `<cache>/<into>/<name>` (atomically; a
 * `.complete` marker records a finished copy) and returns that directory.
 */
export function collectManifests(opts: { name: string; module: string; version: string; subs: string[]; kind: string; apiVersion: string; into: string; cwd: string; log: Log }): string {
  const dir = join(cacheRoot(), opts.into, opts.name);
  if (existsSync(join(dir, '.complete'))) return dir;
  requireGo(`${opts.module} manifests`);
  opts.log(`collecting ${opts.module} ${opts.version} ${opts.kind} files from ${opts.subs.join(', ')}`);
  const root = moduleDir(opts.module, opts.version, opts.cwd);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const escape = (s: string): string => s.replace(/[./]/g, '\\$&');
  const kindLine = new RegExp(`^kind:\\s*${escape(opts.kind)}\\s*$`, 'm');
  const apiVersionLine = new RegExp(`^apiVersion:\\s*${escape(opts.apiVersion)}\\s*$`, 'm');
  let count = 0;
  for (const sub of opts.subs) {
    const src = join(root, sub);
    for (const f of readdirSync(src).sort()) {
      if (!f.endsWith('.yaml')) continue;
      // Only objects of that kind: the same directories also ship other
      // objects (Gateway API's safe-upgrades ValidatingAdmissionPolicy, a
      // kustomization, say).
      const text = readFileSync(join(src, f), 'utf8');
      if (!kindLine.test(text) || !apiVersionLine.test(text)) continue;
      if (existsSync(join(tmp, f))) throw new Error(`${f} is in more than one of ${opts.subs.join(', ')}`);
      copyFileSync(join(src, f), join(tmp, f));
      // The module cache is read-only; the copies need not be.
      chmodSync(join(tmp, f), 0o644);
      count++;
    }
  }
  if (count === 0) throw new Error(`no ${opts.kind} files in ${opts.subs.join(', ')} of ${opts.module}`);
  writeFileSync(join(tmp, '.complete'), `${opts.module}@${opts.version}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  renameSync(tmp, dir);
  opts.log(`collected ${count} ${opts.kind} files into ${dir}`);
  return dir;
}

/** Whether a process of that pid exists (signal 0 checks without sending). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A cross-process lock (a directory holding the owner's pid), so two
 * concurrent runs never build the same binary twice. A lock whose owner died
 * is taken over.
 */
export async function withLock<T>(name: string, log: Log, fn: () => Promise<T>): Promise<T> {
  const lock = join(cacheRoot(), name);
  mkdirSync(cacheRoot(), { recursive: true });
  const deadline = Date.now() + 60 * 60 * 1000;
  let lastSaid = 0;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      let holder = 0;
      try {
        holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {
        // being created
      }
      if (holder > 0 && !processAlive(holder)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for build lock ${lock}`);
      // Once a minute: a test file may wait minutes for the build that
      // `npm test` runs beside the tests (tools/assets.mts).
      if (Date.now() - lastSaid >= 60_000) {
        log(`waiting for another build (pid ${holder || '?'}) to finish`);
        lastSaid = Date.now();
      }
      await new Promise((r) => setTimeout(r, 5000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Runs a builder's main when its file is the process entry point, with clean interruption. */
export function runAsScript<T>(moduleUrl: string, main: () => Promise<T>, log: Log): void {
  if (!process.argv[1] || fileURLToPath(moduleUrl) !== process.argv[1]) return;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      stopBuilds();
      process.exit(130);
    });
  }
  main().then(
    (result) => {
      if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(result)}\n`);
    },
    (err: unknown) => {
      log(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

/** Where a pinned tool's binary is: the file an environment variable names, else the cache. */
export function cachedBinary(envVar: string, dirName: string, file: string): string {
  return process.env[envVar] || join(cacheRoot(), 'bin', dirName, file);
}

/**
 * Makes sure a pinned tool's binary exists: the one an environment variable
 * names must be there; otherwise it is built once, under a cross-process lock,
 * with `build`.
 */
export async function ensureBinary(opts: { binary: string; envVar: string; lock: string; log: Log; requires: string; announce: string; build: () => Promise<void> }): Promise<void> {
  if (process.env[opts.envVar]) {
    if (!existsSync(opts.binary)) throw new Error(`${opts.binary} does not exist (from ${opts.envVar})`);
    return;
  }
  if (existsSync(opts.binary)) return;
  await withLock(opts.lock, opts.log, async () => {
    if (existsSync(opts.binary)) return;
    requireGo(opts.requires);
    opts.log(opts.announce);
    await opts.build();
  });
}
