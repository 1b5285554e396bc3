#!/usr/bin/env node
// `npm run build:plugin`: kubectl-meridio (cli/kubectl-meridio) as one
// executable per platform, with Node's single-executable applications
// support, so that an operator installs one file and no Node:
// 1. the plugin and everything it imports bundled into one CommonJS script
//    (tools/bundle's bundleScript, as the function's snapshot bundle is);
// 2. a preparation blob of it (`node --experimental-sea-config`), prepared by
//    the Node running this build;
// 3. that Node release's binary for each platform (node-binaries.mts),
//    stripped of its symbols and debug information (129 -> 111 MB for
//    linux/amd64), with the blob injected by postject. postject prints
//    "Can't find string offset for section name '.note.100'" warnings for
//    Node's ELF notes: harmless, the executable runs (the test runs it).
// The blob has no startup snapshot and no code cache: both only load on the
// platform that made them, and one blob then serves every platform. The code
// cache's gain did not show (`kubectl-meridio version`, 10 runs each, on a
// loaded machine: 0.26 to 0.35 s with it, 0.30 to 0.36 s without).
//
// Writes <out>/<os>-<arch>/kubectl-meridio (default out: dist/plugin).
//
// Usage: node tools/plugin/build.mts [--platform linux/amd64|linux/arm64]... [--out <dir>]
//   (no --platform: every platform of PLUGIN_PLATFORMS)
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import postject from 'postject';
import { bundleScript } from '../bundle/bundle-script.mts';
import { logger, runAsScript, type Log } from '../go-build.mts';
import { ensureHostTools, type HostTool } from '../image/host-tools.mts';
import { repoRoot } from '../harness/repo-root.ts';
import { elfPlatform, hostPlatform, isPluginPlatform, nodeBinary, PLUGIN_PLATFORMS, type PluginPlatform } from './node-binaries.mts';

export const PLUGIN_BINARY = 'kubectl-meridio';
export const PLUGIN_ENTRY = 'cli/kubectl-meridio/main.ts';
/** Where the bundle and the blob go, relative to the repository root. */
const WORK_DIR = join('dist', 'plugin');
const SCRIPT = join(WORK_DIR, `${PLUGIN_BINARY}.cjs`);
const BLOB = join(WORK_DIR, `${PLUGIN_BINARY}.blob`);

// The marker postject flips in the Node binary to say "a blob is injected"
// and the resource name Node looks the blob up by: both fixed by Node.
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const SEA_RESOURCE = 'NODE_SEA_BLOB';

/** The binutils `strip` of each platform, from Debian's cross binutils (installed when missing). */
const STRIP: Record<PluginPlatform, HostTool> = {
  'linux/amd64': { command: 'x86_64-linux-gnu-strip', pkg: 'binutils-x86-64-linux-gnu' },
  'linux/arm64': { command: 'aarch64-linux-gnu-strip', pkg: 'binutils-aarch64-linux-gnu' },
};

export interface PluginExecutable {
  platform: PluginPlatform;
  file: string;
  bytes: number;
}

export interface PluginBuild {
  /** The Node release every executable runs. */
  node: string;
  /** The bundled script's and the blob's sizes. */
  scriptBytes: number;
  blobBytes: number;
  executables: PluginExecutable[];
}

/** `--experimental-sea-config`'s file: the script, the blob, and nothing platform-bound in it. */
export function seaConfig(main: string, output: string): Record<string, unknown> {
  return { main, output, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false };
}

/** The executable of a platform under `out`. */
export function executableFile(out: string, platform: PluginPlatform): string {
  return join(out, platform.replace('/', '-'), PLUGIN_BINARY);
}

export function parsePlatforms(asked: readonly string[]): PluginPlatform[] {
  const bad = asked.filter((p) => !isPluginPlatform(p));
  if (bad.length > 0) throw new Error(`--platform ${bad.join(', ')}: the plugin is built for ${PLUGIN_PLATFORMS.join(' and ')}`);
  return asked.length === 0 ? [...PLUGIN_PLATFORMS] : [...new Set(asked as PluginPlatform[])];
}

export async function buildPlugin(opts: { platforms: readonly PluginPlatform[]; out: string; log: Log }): Promise<PluginBuild> {
  const root = repoRoot();
  await bundleScript(PLUGIN_ENTRY, SCRIPT);
  const config = join(WORK_DIR, `${PLUGIN_BINARY}.sea.json`);
  writeFileSync(join(root, config), `${JSON.stringify(seaConfig(SCRIPT, BLOB), null, 2)}\n`);
  execFileSync(process.execPath, ['--experimental-sea-config', config], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  const blob = readFileSync(join(root, BLOB));
  const executables: PluginExecutable[] = [];
  for (const platform of opts.platforms) {
    const base = await nodeBinary(platform, opts.log);
    const file = resolve(executableFile(opts.out, platform));
    mkdirSync(join(file, '..'), { recursive: true });
    rmSync(file, { force: true });
    const strip = STRIP[platform];
    await ensureHostTools([strip], opts.log);
    execFileSync(strip.command, ['--strip-all', '-o', file, base]);
    chmodSync(file, 0o755);
    await postject.inject(file, SEA_RESOURCE, blob, { sentinelFuse: SEA_FUSE });
    if (elfPlatform(file) !== platform) throw new Error(`${file} is not a ${platform} executable after injection`);
    executables.push({ platform, file, bytes: statSync(file).size });
    opts.log(`${platform}: ${file} (${(statSync(file).size / 1e6).toFixed(1)} MB${platform === hostPlatform() ? '' : ', not runnable on this machine'})`);
  }
  return { node: process.versions.node, scriptBytes: statSync(join(root, SCRIPT)).size, blobBytes: blob.length, executables };
}

const log = logger('plugin');
runAsScript(import.meta.url, async () => {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { platform: { type: 'string', multiple: true, default: [] }, out: { type: 'string' }, print: { type: 'boolean' } } });
  const built = await buildPlugin({ platforms: parsePlatforms(values.platform), out: values.out ?? join(repoRoot(), WORK_DIR), log });
  log(`Node ${built.node}; bundle ${(built.scriptBytes / 1e6).toFixed(2)} MB, blob ${(built.blobBytes / 1e6).toFixed(2)} MB`);
  return built;
}, log);
